/**
 * Everything stored for a project's entries, as one list: the prefixes a
 * project's deletion removes and the count of entries it reports. Pages,
 * chunks, summaries, Bloom filters, counters and the compaction marker all
 * belong to the project and go with it.
 *
 * @module
 */
import {
  batchPartKey,
  logBloomsPrefix,
  logChunkPartsPrefix,
  logChunksPrefix,
  logCompactionKey,
  logCountsPrefix,
  logPartsPrefix,
  logsPrefix,
  logSummariesPrefix,
  logUnitId,
} from "../keys.ts";
import { pageBatchRef, pageEntryCount, type StoredPage } from "../logs.ts";
import { decodeSummary } from "./chunk.ts";

/** Prefixes of everything stored for a project's entries. */
export function storedLogPrefixes(projectId: string): Deno.KvKey[] {
  return [
    logsPrefix(projectId),
    logPartsPrefix(projectId),
    logSummariesPrefix(projectId),
    logBloomsPrefix(projectId),
    logChunksPrefix(projectId),
    logChunkPartsPrefix(projectId),
    logCountsPrefix(projectId),
  ];
}

/** Single keys stored for a project's entries (beside the prefixes). */
export function storedLogKeys(projectId: string): Deno.KvKey[] {
  return [logCompactionKey(projectId)];
}

/**
 * How long a count is tried again while compactions keep committing: a
 * compaction round over a large backlog commits chunk after chunk, and
 * rounds run every few seconds with quiet time between them.
 */
const COUNT_PATIENCE_MS = 120_000;
/** Pause between two counts. */
const COUNT_RETRY_MS = 100;

/**
 * Counts a project's stored entries from page headers and chunk summaries,
 * without reading any entry, exactly even while a compactor runs.
 *
 * @example
 * ```ts
 * await countStoredEntries(kv, projectId); // 1_000_000
 * ```
 */
export async function countStoredEntries(
  kv: Deno.Kv,
  projectId: string,
): Promise<number> {
  // Pages and summaries are two listings: a compaction committing between
  // them would count its entries twice. Every compaction bumps the project's
  // compaction counter in its commit, so a count during which it did not
  // change saw no entry move.
  const deadline = Date.now() + COUNT_PATIENCE_MS;
  for (;;) {
    const before = await kv.get(logCompactionKey(projectId));
    let n = 0;
    const pages = kv.list<StoredPage>({ prefix: logsPrefix(projectId) }, {
      batchSize: 500,
    });
    for await (const page of pages) n += pageEntryCount(page.value);
    const summaries = kv.list({ prefix: logSummariesPrefix(projectId) }, {
      batchSize: 1000,
    });
    for await (const entry of summaries) {
      n += decodeSummary(entry.value, logUnitId(entry.key)).count;
    }
    const after = await kv.get(logCompactionKey(projectId));
    if (after.versionstamp === before.versionstamp) return n;
    if (Date.now() > deadline) {
      throw new Error(
        `Cannot count the entries of project "${projectId}": compactions kept moving them`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, COUNT_RETRY_MS));
  }
}

/**
 * The keys of the batch bytes that the project's pages by reference read
 * (docs/design.md#pages-by-reference): a project's deletion deletes them
 * before its pages.
 *
 * @example
 * ```ts
 * const keys = await referredBatchKeys(kv, projectId);
 * ```
 */
export async function referredBatchKeys(
  kv: Deno.Kv,
  projectId: string,
): Promise<Deno.KvKey[]> {
  const keys: Deno.KvKey[] = [];
  const pages = kv.list<StoredPage>({ prefix: logsPrefix(projectId) }, {
    batchSize: 500,
  });
  for await (const page of pages) {
    const ref = pageBatchRef(page.value);
    for (let n = 0; ref && n < ref.parts; n++) {
      keys.push(batchPartKey(ref.batchId, n));
    }
  }
  return keys;
}
