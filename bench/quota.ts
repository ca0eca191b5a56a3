/**
 * What quotas and batch sealing cost per entry (docs/privacy.md#what-it-costs),
 * in process, on the query bench's typical entries:
 *
 * - the consumer's time per entry for a project without a quota, with a
 *   quota that is never reached (the grant's read and small commit per
 *   batch), and with spike protection too, in alternating rounds;
 * - sealing and opening a batch's JSON (AES-GCM, one call per batch of
 *   200 entries), per entry.
 *
 * ```sh
 * deno run --allow-read --allow-write --allow-env bench/quota.ts [--count 20000]
 * ```
 *
 * @module
 */
import type { Project } from "../db/projects.ts";
import { admitEntries } from "../db/quota.ts";
import { pendingBatchKey, projectKey } from "../db/keys.ts";
import { encodeJson } from "../db/kv.ts";
import { type QueuedEntry, toLogRecord } from "../domain/entry.ts";
import { openBatch, sealBatch } from "../queue/batch.ts";
import {
  benchProjects,
  consumerMicros,
  countAndRounds,
  GROUP,
  START,
  typicalEntries,
  withMemoryKv,
} from "./scrub.ts";
import { median } from "./timing.ts";

/** Sealing and opening per entry, µs, over batches of {@linkcode GROUP}. */
async function sealMicros(
  texts: string[],
): Promise<{ seal: number; open: number }> {
  return await withMemoryKv(async (kv) => {
    const batches: string[] = [];
    for (let at = 0; at < texts.length; at += GROUP) {
      batches.push(`[${texts.slice(at, at + GROUP).join(",")}]`);
    }
    await sealBatch(kv, "[]"); // the key, made once
    let began = performance.now();
    const sealed: Uint8Array[] = [];
    for (const batch of batches) sealed.push(await sealBatch(kv, batch));
    const seal = (performance.now() - began) * 1000 / texts.length;
    began = performance.now();
    for (const bytes of sealed) await openBatch(kv, bytes);
    const open = (performance.now() - began) * 1000 / texts.length;
    return { seal, open };
  });
}

/**
 * The quota's own step per entry, µs: `admitEntries` (a read of the state,
 * the grant and the pending key, and the small commit) for each batch of
 * {@linkcode GROUP}.
 */
async function admitMicros(
  project: Project,
  entries: QueuedEntry[],
): Promise<number> {
  return await withMemoryKv(async (kv) => {
    const set = await kv.set(projectKey(project.id), encodeJson(project));
    const records = entries.map((e) => toLogRecord(e, "origin"));
    const now = entries.at(-1)!.receivedAt;
    const pending = [];
    for (let at = 0; at < records.length; at += GROUP) {
      const key = pendingBatchKey(`b${at}`);
      pending.push({ key, versionstamp: (await kv.set(key, 0)).versionstamp });
    }
    const began = performance.now();
    for (let at = 0; at < records.length; at += GROUP) {
      await admitEntries(kv, {
        batches: [{ id: `b${at}`, guard: pending[at / GROUP]! }],
        project,
        versionstamp: set.versionstamp,
        records: records.slice(at, at + GROUP),
        free: new Set(),
        now,
      });
    }
    return (performance.now() - began) * 1000 / entries.length;
  });
}

if (import.meta.main) {
  const { count, rounds } = countAndRounds();
  const [plain] = await benchProjects("quota bench");
  const variants: [string, Project][] = [
    ["no quota", plain],
    ["quota", { ...plain, quota: { perDay: 1e9, perMinute: 1e7 } }],
    ["quota and spike", {
      ...plain,
      quota: { perDay: 1e9, perMinute: 1e7 },
      spike: { multiple: 1000, keep: 10 },
    }],
  ];
  const entries = typicalEntries(plain.id, count, START);
  const times = new Map<string, number[]>(variants.map(([n]) => [n, []]));
  const admits: number[] = [];
  for (let round = 0; round < rounds; round++) {
    // A different first variant each round: the first one runs colder.
    for (let i = 0; i < variants.length; i++) {
      const [name, project] = variants[(round + i) % variants.length]!;
      times.get(name)!.push(await consumerMicros(project, entries));
    }
    admits.push(await admitMicros(variants[2]![1], entries));
  }
  const base = median(times.get("no quota")!);
  for (const [name] of variants) {
    const m = median(times.get(name)!);
    console.log(
      `${name}: consumer ${m.toFixed(2)} µs/entry (${
        (m - base).toFixed(2)
      } µs over no quota)`,
    );
  }
  console.log(
    `the quota's own step (read, decide, commit a grant): ${
      median(admits).toFixed(2)
    } µs/entry in batches of ${GROUP}`,
  );
  const texts = entries.map((e) => JSON.stringify(e));
  const seals = [];
  for (let round = 0; round < rounds; round++) {
    seals.push(await sealMicros(texts));
  }
  const bytes = texts.reduce((n, t) => n + t.length, 0) / texts.length;
  console.log(
    `sealing: ${
      median(seals.map((s) => s.seal)).toFixed(3)
    } µs/entry, opening ${
      median(seals.map((s) => s.open)).toFixed(3)
    } µs/entry (batches of ${GROUP}, ${bytes.toFixed(0)} bytes an entry)`,
  );
}
