/**
 * The in-process pipeline bench (bench/pipeline.ts): its command line and
 * the KV view that counts commits and mutations.
 *
 * @module
 */
import assert from "node:assert/strict";
import { countingKv, parseBenchOptions } from "../../bench/pipeline.ts";

Deno.test("the pipeline bench's options default to 2,000 entries/s for 8 s, merger on, and refuse a bad number", () => {
  assert.deepEqual(parseBenchOptions([]), {
    rate: 2000,
    seconds: 8,
    linger: undefined,
    merge: true,
    driverOnly: false,
  });
  const burst = parseBenchOptions([
    "--rate",
    "0",
    "--linger",
    "0",
    "--no-merge",
  ]);
  assert.equal(burst.rate, 0);
  assert.equal(burst.linger, 0);
  assert.equal(burst.merge, false);
  assert.throws(() => parseBenchOptions(["--rate", "fast"]), /--rate/);
});

Deno.test("the counting view of KV counts commits and mutations and writes through", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const counts = { commits: 0, mutations: 0 };
    const counted = countingKv(kv, counts);
    const result = await counted.atomic()
      .set(["a"], 1)
      .sum(["n"], 2n)
      .delete(["b"])
      .commit();
    assert.equal(result.ok, true);
    assert.deepEqual(counts, { commits: 1, mutations: 3 });
    assert.equal((await counted.get(["a"])).value, 1);
    assert.equal((await kv.get<Deno.KvU64>(["n"])).value?.value, 2n);
  } finally {
    kv.close();
  }
});
