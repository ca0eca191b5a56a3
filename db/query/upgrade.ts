/**
 * Pages of earlier versions, made chunks: before entries were written in
 * final form, the consumer stored them as pages under
 * `logs/<projectId>/<first id>` (further bytes under `log_parts/`), in one of
 * three forms, which a compactor turned into chunks once traffic stopped.
 * The merger calls {@linkcode upgradePages} at the start of each round, so a
 * database written by such a version loses no entry on upgrade: each page
 * becomes a chunk of tier 0 in one commit that deletes it (and the batch
 * bytes a page by reference read), checked against the project record.
 * Nothing writes pages any more; once a project has none, this costs one
 * empty listing per round (docs/storage.md#upgrading-from-a-version-that-stored-pages).
 *
 * @module
 */
import type { AuthMethod, LogRecord, QueuedEntry } from "../../domain/entry.ts";
import { toLogRecord } from "../../domain/entry.ts";
import { joinBytes, joinJson } from "../blob.ts";
import {
  batchPartKey,
  legacyPagePartKey,
  legacyPagePrefixes,
  logUnitId,
} from "../keys.ts";
import { decodeJson } from "../kv.ts";
import {
  decodeRecordLine,
  encodeRecordLine,
  lineFromQueued,
} from "../lines.ts";
import { addLogCounts } from "../log_counts.ts";
import { chunkExpireIn, setChunk } from "../logs.ts";
import { buildChunk } from "./chunk.ts";

/** A page as the first versions wrote it: a V8-serialized object. */
interface ObjectPage {
  head: Uint8Array;
  parts: number;
  count: number;
}

/** What a page by reference held after its 4-byte header. */
interface PageRef {
  batch: string;
  parts: number;
  auth: AuthMethod | AuthMethod[];
}

/** Pages made chunks per call at most. */
const PAGES_PER_CALL = 200;
const decoder = new TextDecoder();

/** A page's lines, the keys to delete with it, and whether it was counted. */
async function readPage(
  kv: Deno.Kv,
  projectId: string,
  firstId: string,
  value: unknown,
): Promise<{ lines: string[]; keys: Deno.KvKey[]; counted: boolean }> {
  const partKey = (n: number) => legacyPagePartKey(projectId, firstId, n);
  const partKeys = (parts: number) =>
    Array.from({ length: parts - 1 }, (_, i) => partKey(i + 1));
  if (!(value instanceof Uint8Array)) {
    const page = value as ObjectPage;
    const records = await joinJson<LogRecord[]>(
      kv,
      page.head,
      page.parts,
      partKey,
    );
    return {
      lines: records.map(encodeRecordLine),
      keys: partKeys(page.parts),
      counted: false,
    };
  }
  if (value[0] === 2) {
    const ref = decodeJson<PageRef>(value.subarray(4))!;
    const head = (await kv.get(batchPartKey(ref.batch, 0))).value;
    const entries = head instanceof Uint8Array
      ? await joinJson<QueuedEntry[]>(
        kv,
        head,
        ref.parts,
        (n) => batchPartKey(ref.batch, n),
      )
      : [];
    const lines = entries.map((entry, i) => {
      const auth = typeof ref.auth === "string" ? ref.auth : ref.auth[i]!;
      return lineFromQueued(JSON.stringify(entry), entry, auth) ??
        encodeRecordLine(toLogRecord(entry, auth));
    });
    const keys = Array.from(
      { length: ref.parts },
      (_, n) => batchPartKey(ref.batch, n),
    );
    return { lines, keys, counted: true };
  }
  const parts = value[1]!;
  const bytes = await joinBytes(kv, value.subarray(4), partKeys(parts));
  const text = decoder.decode(bytes);
  return {
    lines: text === "" ? [] : text.split("\n"),
    keys: partKeys(parts),
    counted: true,
  };
}

/**
 * Makes each page of an earlier version a chunk (see the module doc);
 * returns how many pages it converted. `project` is the record's entry,
 * which every commit checks.
 *
 * @example
 * ```ts
 * await upgradePages(kv, projectId, { now, retentionMs, project: entry });
 * ```
 */
export async function upgradePages(
  kv: Deno.Kv,
  projectId: string,
  options: {
    now: number;
    retentionMs: number;
    project: Deno.KvEntryMaybe<unknown>;
  },
): Promise<number> {
  const [pagesPrefix] = legacyPagePrefixes(projectId);
  let done = 0;
  const iter = kv.list({ prefix: pagesPrefix! }, { limit: PAGES_PER_CALL });
  for await (const entry of iter) {
    const firstId = logUnitId(entry.key);
    let page: Awaited<ReturnType<typeof readPage>>;
    try {
      page = await readPage(kv, projectId, firstId, entry.value);
    } catch {
      continue; // converted by another process meanwhile, its parts gone
    }
    const { lines, keys, counted } = page;
    const op = kv.atomic().check(options.project).check(entry);
    op.delete(entry.key);
    for (const key of keys) op.delete(key);
    if (lines.length > 0) {
      lines.sort();
      const records = lines.map(decodeRecordLine);
      const chunk = buildChunk(lines, { records });
      setChunk(op, projectId, chunk, {
        expireIn: chunkExpireIn(
          records[0]!.id,
          options.retentionMs,
          options.now,
        ),
      });
      if (!counted) addLogCounts(op, projectId, records);
    }
    // Another process converted it meanwhile, or the project went: skip.
    if ((await op.commit()).ok) done++;
  }
  return done;
}
