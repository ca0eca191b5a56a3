/**
 * Stored values are bytes any Deno version reads (docs/design.md#value-encoding),
 * and values stored in the runtime's own encoding by earlier versions are
 * still read.
 *
 * @module
 */
import assert from "node:assert/strict";
import { projectKey } from "../../db/keys.ts";
import {
  decodeFramed,
  decodeJson,
  encodeFramed,
  encodeJson,
  getManyChunked,
  UnreadableValueError,
} from "../../db/kv.ts";
import { getProject } from "../../db/projects.ts";
import { mergeProject } from "../../db/storage/merge.ts";
import { recordFailure } from "../../queue/dead_letters.ts";
import {
  harnessTest,
  ORIGIN,
  pendingBatches,
  postEntries,
} from "../_helpers/harness.ts";

Deno.test("encodeJson and encodeFramed round-trip, and decodeFramed refuses cut bytes", () => {
  const value = { a: 1, b: ["é", null], c: { d: true } };
  assert.deepEqual(decodeJson(encodeJson(value)), value);
  assert.equal(decodeJson(null), null);
  const payload = new Uint8Array([0, 1, 2, 255]);
  const { header, payload: back } = decodeFramed(encodeFramed(value, payload));
  assert.deepEqual(header, value);
  assert.deepEqual(back, payload);
  const framed = encodeFramed(value, payload);
  assert.throws(() => decodeFramed(framed.subarray(0, 6)), RangeError);
  assert.throws(() => decodeFramed(new Uint8Array(2)), RangeError);
});

Deno.test("getManyChunked reads more keys than one getMany takes, in order", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const keys = Array.from({ length: 25 }, (_, i) => ["k", i]);
    for (const key of keys.slice(0, 20)) await kv.set(key, encodeJson(key[1]));
    const entries = await getManyChunked(kv, keys);
    assert.deepEqual(
      entries.map((e) => decodeJson(e.value)),
      [...Array.from({ length: 20 }, (_, i) => i), ...Array(5).fill(null)],
    );
  } finally {
    kv.close();
  }
});

harnessTest(
  "every value a full flow stores is bytes or a counter",
  async (h) => {
    const project = await h.project([ORIGIN]);
    await postEntries(h, project.id, { origin: ORIGIN });
    await postEntries(h, project.id, { secret: project.secret });
    await postEntries(h, project.id, { origin: "https://evil.example.com" });
    await postEntries(h, "no-such-project");
    await h.process();
    // Settled pages move into chunks with their summaries and filters.
    await postEntries(h, project.id, { origin: ORIGIN });
    await h.process();
    await mergeProject(h.kv, project.id, {
      now: h.clock.now() + 2 * 3_600_000,
      settleMs: 0,
    });
    await postEntries(h, project.id, { origin: ORIGIN });
    await h.process();
    // A batch that keeps failing becomes a dead letter.
    await postEntries(h, project.id);
    const [batch] = await pendingBatches(h.kv);
    for (let i = 0; i < 5; i++) {
      await recordFailure(h.kv, batch!.id, new Error("x"), h.clock.now());
    }
    const prefixes = new Set<string>();
    for await (const entry of h.kv.list({ prefix: [] })) {
      const prefix = String(entry.key[0]);
      prefixes.add(prefix);
      assert.ok(
        entry.value instanceof Uint8Array ||
          entry.value instanceof Deno.KvU64,
        `${entry.key.join("/")} holds a ${typeof entry.value}`,
      );
    }
    for (
      const prefix of [
        "projects",
        "log_counts",
        "log_chunks",
        "log_summaries",
        "log_blooms",
        "log_merges",
        "stats",
        "rejections",
        "seen_signatures",
        "global_stats",
        "dead_letters",
      ]
    ) {
      assert.ok(prefixes.has(prefix), `nothing stored under ${prefix}`);
    }
  },
);

harnessTest(
  "a value in the runtime's own encoding is refused as unreadable, never read as it comes",
  async (h) => {
    const current = await h.project([ORIGIN]);
    await h.kv.set(projectKey(current.id), { ...current });
    await assert.rejects(
      () => getProject(h.kv, current.id),
      UnreadableValueError,
    );
  },
);
