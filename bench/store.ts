/**
 * What the service's KV file holds before, during and after the load: the
 * bench project, created before the service starts; waiting until no batch
 * is pending (the drain); and counting stored entries, the accepted counter,
 * pending batches and dead letters at the end.
 *
 * Once the service runs, it opens the KV file the service writes, from
 * another process, and only reads it.
 *
 * @module
 */
import {
  acceptedCountKey,
  deadLettersPrefix,
  pendingBatchesPrefix,
} from "../db/keys.ts";
import { createProject, type Project } from "../db/projects.ts";
import { countStoredEntries } from "../db/query/mod.ts";

/** The Origin of the bench entries (bench/post.lua sends it too). */
export const BENCH_ORIGIN = "https://bench.example";

/**
 * Creates the bench project, which allows {@linkcode BENCH_ORIGIN}, in the
 * KV file at `kvPath`, before the service opens it.
 *
 * @example
 * ```ts
 * const project = await createBenchProject(`${dir}/kv.sqlite`, "bench");
 * ```
 */
export function createBenchProject(
  kvPath: string,
  name: string,
): Promise<Project> {
  return withFile(
    kvPath,
    (kv) => createProject(kv, { name, allow: [BENCH_ORIGIN] }),
  );
}

/** Runs `fn` on the KV file at `kvPath`, closing it after. */
async function withFile<T>(
  kvPath: string,
  fn: (kv: Deno.Kv) => Promise<T>,
): Promise<T> {
  const kv = await Deno.openKv(kvPath);
  try {
    return await fn(kv);
  } finally {
    kv.close();
  }
}

/** Batches counted at the first poll of a drain, at most. */
const FIRST_POLL_LIMIT = 10_000;

/** Options of {@linkcode waitForDrain}. */
interface WaitForDrainOptions {
  kvPath: string;
  projectId: string;
  /** When the load ended (`performance.now()`). */
  loadEnded: number;
  timeoutMs: number;
  /** Poll period. @default {25} */
  pollMs?: number;
}

/** What {@linkcode waitForDrain} saw. */
interface DrainResult {
  /** Whether no batch was pending before the timeout. */
  drained: boolean;
  /** From the end of load to the first poll that found no pending batch, ms. */
  drainMs: number;
  /** Batches pending at the first poll (counted up to 10,000). */
  pendingAtFirstPoll: number;
  /** The project's accepted counter at the end. */
  accepted: number;
}

/** What the KV file holds for the project at the end. */
export interface StoreCount {
  /** Entries stored. */
  stored: number;
  /** The project's accepted counter. */
  accepted: number;
  pendingBatches: number;
  deadLetters: number;
}

async function countPrefix(kv: Deno.Kv, prefix: Deno.KvKey): Promise<number> {
  let n = 0;
  for await (const _ of kv.list({ prefix }, { batchSize: 1000 })) n++;
  return n;
}

async function acceptedCount(kv: Deno.Kv, projectId: string): Promise<number> {
  const entry = await kv.get<Deno.KvU64>(acceptedCountKey(projectId));
  return entry.value === null ? 0 : Number(entry.value.value);
}

/**
 * Polls the service's KV file until no batch is pending. The drain time is
 * exact to `pollMs` plus the time of one poll.
 *
 * @example
 * ```ts
 * const { drainMs } = await waitForDrain({ kvPath, projectId, loadEnded: performance.now(), timeoutMs: 180_000 });
 * ```
 */
export function waitForDrain(
  options: WaitForDrainOptions,
): Promise<DrainResult> {
  return withFile(options.kvPath, async (kv) => {
    const deadline = options.loadEnded + options.timeoutMs;
    let pendingAtFirstPoll: number | undefined;
    for (;;) {
      let pending = 0;
      const iter = kv.list({ prefix: pendingBatchesPrefix() }, {
        limit: pendingAtFirstPoll === undefined ? FIRST_POLL_LIMIT : 1,
      });
      for await (const _ of iter) pending++;
      pendingAtFirstPoll ??= pending;
      const now = performance.now();
      if (pending === 0 || now > deadline) {
        return {
          drained: pending === 0,
          drainMs: now - options.loadEnded,
          pendingAtFirstPoll,
          accepted: await acceptedCount(kv, options.projectId),
        };
      }
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 25));
    }
  });
}

/**
 * Counts stored entries, the accepted counter, pending batches and dead
 * letters.
 *
 * @example
 * ```ts
 * const { stored, accepted } = await countStore(kvPath, projectId);
 * ```
 */
export function countStore(
  kvPath: string,
  projectId: string,
): Promise<StoreCount> {
  return withFile(kvPath, async (kv) => ({
    stored: await countStoredEntries(kv, projectId),
    accepted: await acceptedCount(kv, projectId),
    pendingBatches: await countPrefix(kv, pendingBatchesPrefix()),
    deadLetters: await countPrefix(kv, deadLettersPrefix()),
  }));
}
