/**
 * The reads a search lists keys in (db/query/listing_reads.ts):
 * they grow, hand every key over in order, and from the third on each
 * starts before the caller works on the one before.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ListingReads } from "../../../db/query/listing_reads.ts";
import { kvTest } from "../../_helpers/harness.ts";

const PREFIX: Deno.KvKey = ["listing_reads_test"];

async function storeKeys(kv: Deno.Kv, count: number): Promise<void> {
  for (let i = 0; i < count; i += 500) {
    const op = kv.atomic();
    for (let j = i; j < Math.min(count, i + 500); j++) {
      op.set([...PREFIX, String(j).padStart(5, "0")], j);
    }
    await op.commit();
  }
}

/** A view of `kv` whose `list` calls are recorded (their batch sizes). */
function recording(kv: Deno.Kv, fail?: (call: number) => boolean) {
  const lists: number[] = [];
  const view = new Proxy(kv, {
    get(target, key) {
      if (key === "list") {
        return (selector: Deno.KvListSelector, options: Deno.KvListOptions) => {
          lists.push(options.limit ?? -1);
          if (fail?.(lists.length)) {
            const failing: AsyncIterable<Deno.KvEntry<unknown>> = {
              [Symbol.asyncIterator]: () => ({
                next: () => Promise.reject(new Error("disk I/O error")),
              }),
            };
            return failing;
          }
          return target.list(selector, options);
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { view, lists };
}

kvTest(
  "a listing hands over every key in order, newest first too, in reads of 10 and then 40",
  async (kv) => {
    await storeKeys(kv, 1000);
    for (const reverse of [false, true]) {
      const { view, lists } = recording(kv);
      const reads = new ListingReads(view, { prefix: PREFIX }, reverse, 10);
      const values: number[] = [];
      for (;;) {
        const next = await reads.next();
        if (next.done) break;
        values.push(next.value.value as number);
      }
      const all = [...Array(1000).keys()];
      assert.deepEqual(values, reverse ? all.reverse() : all);
      // 10, then 40 each: 10 + 24 × 40 = 970, and one more read of 30.
      assert.deepEqual(lists, [10, ...Array(25).fill(40)]);
    }
  },
);

kvTest(
  "a listing reads ahead only from its fourth read, as soon as the third is handed over",
  async (kv) => {
    await storeKeys(kv, 200);
    const { view, lists } = recording(kv);
    const reads = new ListingReads(view, { prefix: PREFIX }, false, 10);
    const take = async (n: number) => {
      for (let i = 0; i < n; i++) await reads.next();
    };
    await take(10);
    assert.equal(lists.length, 1, "a page within the first read reads once");
    await take(1);
    assert.equal(
      lists.length,
      2,
      "the second read, when its first key is asked for",
    );
    await take(39);
    assert.equal(lists.length, 2);
    await take(1);
    // The third read, when its first key is asked for, and the fourth,
    // started as soon as the third was handed over.
    assert.equal(lists.length, 4);
  },
);

kvTest(
  "a read ahead that fails is the listing's error once its keys are asked for, and nothing when the listing is left before",
  async (kv) => {
    await storeKeys(kv, 200);
    const left = recording(kv, (call) => call === 4);
    const reads = new ListingReads(left.view, { prefix: PREFIX }, false, 10);
    for (let i = 0; i < 51; i++) await reads.next();
    assert.equal(
      left.lists.length,
      4,
      "the fourth was started, and failed unheard",
    );
    const failing = recording(kv, (call) => call === 4);
    const all = new ListingReads(failing.view, { prefix: PREFIX }, false, 10);
    await assert.rejects(async () => {
      for (;;) if ((await all.next()).done) break;
    }, /disk I\/O error/);
  },
);
