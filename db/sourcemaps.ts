/**
 * A project's source maps (docs/errors.md#source-maps): uploaded per release
 * for the URL of the minified file they describe, stored in slices of at most
 * 60 KB (one KV value holds 64 KiB), listed and deleted by release, deleted
 * with the project.
 *
 * One index row per project holds the count and bytes of its maps and the
 * maps of each release: the bounds are checked against it in the commit
 * that makes a map visible (so two uploads cannot both pass them), and the
 * consumer reads it to know, in one read, whether an entry's release has
 * maps at all. A map's slices are written first, in commits of their own,
 * and the map becomes visible only with its record; a deleted map's record
 * goes first, then its slices. Slices that may be left without a record (an
 * upload under way, a record deleted or replaced) are noted as loose first:
 * if the upload or the deletion is cut short (a crash, a KV error), a merge
 * round deletes them ({@linkcode sweepLooseSlices}).
 *
 * A map is refused whose decoded form would be out of proportion to its
 * JSON: the consumer decodes a map into an array per generated line and one
 * per segment, so 10 MB of `"AAAA;"` took 556 MB of memory. Its lines,
 * segments and sections are counted at upload, without decoding them
 * ({@linkcode countMappings}).
 *
 * @module
 */
import { SLICE_BYTES, splitBytes } from "./blob.ts";
import { decodeJson, encodeJson, getManyChunked, listJson } from "./kv.ts";
import {
  projectKey,
  sourceMapIndexKey,
  sourceMapKey,
  sourceMapLooseKey,
  sourceMapSliceKey,
} from "./keys.ts";
import { deletePrefix, ProjectNotFoundError } from "./projects.ts";
import { countMappings } from "../domain/symbolicate.ts";
import { MAX_RELEASE_CHARS } from "./releases.ts";

/** Bytes of one source map at most. */
export const MAX_MAP_BYTES = 10_000_000;
/** Source maps one project keeps at most. */
export const MAX_MAPS_PER_PROJECT = 500;
/** Bytes of a project's source maps together at most. */
export const MAX_PROJECT_MAP_BYTES = 100_000_000;
/**
 * Generated lines one map's mappings describe at most, its sections' offsets
 * included: the map of a 9.7 MB bundle that is not minified (the TypeScript
 * compiler) has 206,531; each line takes 40 to 184 bytes decoded.
 */
export const MAX_MAP_LINES = 250_000;
/**
 * Segments of one map's mappings at most: a minified bundle's map has about
 * one per 6.5 characters of mappings (684,233 for the TypeScript compiler's
 * 3.5 MB), so 10 MB of mappings about 1.55 million; each takes 64 to 96
 * bytes decoded.
 */
export const MAX_MAP_SEGMENTS = 2_000_000;
/**
 * Sections of one sectioned (index) map at most, nested ones included;
 * each is read as a map of its own.
 */
export const MAX_MAP_SECTIONS = 10_000;
/** Longest URL a map is uploaded for, in characters. */
export const MAX_MAP_URL_CHARS = 2_048;
/** Slices one commit writes: 12 × 60 KB stays under KV's 800 KiB a commit. */
const SLICES_PER_COMMIT = 12;
/**
 * Age after which loose slices are deleted: longer than an upload takes to
 * write its slices once its bytes have arrived.
 */
export const LOOSE_SLICES_MS = 10 * 60_000;

/** A note that a map's slices go unless its record names them. */
interface LooseSlices {
  release: string;
  /** When noted, Unix milliseconds. */
  at: number;
}

/** A stored source map, without its bytes. */
export interface SourceMapRecord {
  id: string;
  release: string;
  /**
   * The minified file's URL it applies to: a full URL, `~/path` (any
   * origin), or a path or file name that a frame's URL ends with.
   */
  url: string;
  /** The file name it was uploaded from, for the listing. */
  name: string;
  bytes: number;
  slices: number;
  /** Whether it holds the original sources (`sourcesContent`). */
  hasSources: boolean;
  uploadedAt: number;
}

/** The project's maps per release, their count and bytes. */
export interface SourceMapIndex {
  maps: number;
  bytes: number;
  /** Maps of each release. */
  releases: Record<string, number>;
}

/** Thrown for a map that is no source map; answered with `400`. */
export class InvalidSourceMapError extends Error {
  override name = "InvalidSourceMapError";
}

/** Thrown past a bound of maps; answered with `413`. */
export class SourceMapTooLargeError extends Error {
  override name = "SourceMapTooLargeError";
}

const EMPTY_INDEX: SourceMapIndex = { maps: 0, bytes: 0, releases: {} };
const decoder = new TextDecoder();

/** A release name, refused when empty, too long or holding control characters. */
export function checkRelease(release: string): string {
  const bad = [...release].some((ch) => ch.charCodeAt(0) < 32);
  if (release.trim() === "" || release.length > MAX_RELEASE_CHARS || bad) {
    throw new InvalidSourceMapError(
      `Cannot read release "${
        release.slice(0, 40)
      }": expected 1 to ${MAX_RELEASE_CHARS} characters`,
    );
  }
  return release;
}

/**
 * What a map's text says about itself: whether it holds its sources, and
 * the `file` it names. Throws {@linkcode InvalidSourceMapError} for text
 * that is no version 3 source map, or whose mappings pass
 * {@linkcode MAX_MAP_LINES}, {@linkcode MAX_MAP_SEGMENTS} or
 * {@linkcode MAX_MAP_SECTIONS}.
 *
 * @example
 * ```ts
 * inspectSourceMap('{"version":3,"sources":["a.js"],"mappings":"AAAA"}'); // { hasSources: false, file: null }
 * ```
 */
export function inspectSourceMap(
  text: string,
): { hasSources: boolean; file: string | null } {
  let map: unknown;
  try {
    map = JSON.parse(text);
  } catch (error) {
    throw new InvalidSourceMapError(
      `Cannot read the source map: not JSON (${(error as Error).message})`,
    );
  }
  const m = map as Record<string, unknown>;
  if (typeof map !== "object" || map === null || m.version !== 3) {
    throw new InvalidSourceMapError(
      'Cannot read the source map: expected an object with "version": 3',
    );
  }
  const sections = Array.isArray(m.sections);
  if (
    !sections && (typeof m.mappings !== "string" || !Array.isArray(m.sources))
  ) {
    throw new InvalidSourceMapError(
      'Cannot read the source map: expected "mappings" (a string) and "sources" (an array), or "sections"',
    );
  }
  checkShape(m);
  const contents = sections
    ? (m.sections as { map?: { sourcesContent?: unknown } }[])
      .some((s) => Array.isArray(s?.map?.sourcesContent))
    : Array.isArray(m.sourcesContent) &&
      m.sourcesContent.some((c) => typeof c === "string");
  return {
    hasSources: contents,
    file: typeof m.file === "string" && m.file !== "" ? m.file : null,
  };
}

/**
 * Throws {@linkcode InvalidSourceMapError} when the map `m` (a plain or a
 * sectioned one, checked as far as its version) would decode to more than
 * the bounds of lines, segments or sections. A section's lines start at its
 * offset, so a section far down counts the empty lines before it.
 */
function checkShape(m: Record<string, unknown>): void {
  const refuse = (what: string) =>
    new InvalidSourceMapError(`Cannot read the source map: ${what}`);
  let lines = 0;
  let segments = 0;
  let sections = 0;
  const todo: { map: unknown; line: number }[] = [{ map: m, line: 0 }];
  for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
    const map = sectionMap(next.map, refuse);
    if (Array.isArray(map.sections)) {
      sections += map.sections.length;
      if (sections > MAX_MAP_SECTIONS) {
        throw refuse(
          `more than ${MAX_MAP_SECTIONS} sections, the most is ${MAX_MAP_SECTIONS}`,
        );
      }
      for (const section of map.sections as { offset?: { line?: unknown } }[]) {
        const line = section?.offset?.line;
        if (
          typeof line !== "number" || !Number.isSafeInteger(line) || line < 0
        ) {
          throw refuse(
            'expected each section\'s "offset" to have a whole "line" from 0',
          );
        }
        todo.push({
          map: (section as { map?: unknown }).map,
          line: next.line + line,
        });
      }
      continue;
    }
    const counted = countMappings(map.mappings as string);
    lines = Math.max(lines, next.line + counted.lines);
    segments += counted.segments;
  }
  if (lines > MAX_MAP_LINES) {
    throw refuse(
      `its mappings describe ${lines} generated lines, the most is ${MAX_MAP_LINES}`,
    );
  }
  if (segments > MAX_MAP_SEGMENTS) {
    throw refuse(
      `its mappings hold ${segments} segments, the most is ${MAX_MAP_SEGMENTS}`,
    );
  }
}

/**
 * A section's map as the decoder reads it (an object, or JSON text of one),
 * with `"mappings"` and `"sources"` or `"sections"`; refused otherwise.
 */
function sectionMap(
  map: unknown,
  refuse: (what: string) => Error,
): Record<string, unknown> {
  let value = map;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      value = null;
    }
  }
  const m = value as Record<string, unknown> | null;
  if (
    typeof m === "object" && m !== null &&
    (Array.isArray(m.sections) ||
      typeof m.mappings === "string" && Array.isArray(m.sources))
  ) {
    return m;
  }
  throw refuse(
    'expected each section\'s "map" to have "mappings" (a string) and "sources" (an array), or "sections"',
  );
}

/** A project's index of maps. */
export async function readSourceMapIndex(
  kv: Deno.Kv,
  projectId: string,
): Promise<{ index: SourceMapIndex; entry: Deno.KvEntryMaybe<unknown> }> {
  const entry = await kv.get(sourceMapIndexKey(projectId));
  return {
    index: decodeJson<SourceMapIndex>(entry.value) ?? EMPTY_INDEX,
    entry,
  };
}

/** Options of {@linkcode uploadSourceMap}. */
export interface UploadSourceMapOptions {
  projectId: string;
  release: string;
  /** The minified file's URL, `~/path`, or a path its URL ends with. */
  url: string;
  /** The map's file name, for the listing. @default the URL's last part */
  name?: string;
  /** The map's bytes (UTF-8 JSON). */
  bytes: Uint8Array;
  now: number;
}

/**
 * Stores a source map of a release for a URL, replacing the release's map
 * of that URL. Throws {@linkcode InvalidSourceMapError} for a bad map or
 * name, {@linkcode SourceMapTooLargeError} past a bound, and
 * `ProjectNotFoundError`.
 *
 * @example
 * ```ts
 * await uploadSourceMap(kv, { projectId, release: "1.4.0", url: "app.min.js", bytes, now: Date.now() });
 * ```
 */
export async function uploadSourceMap(
  kv: Deno.Kv,
  options: UploadSourceMapOptions,
): Promise<SourceMapRecord> {
  const { projectId, bytes } = options;
  const release = checkRelease(options.release);
  const url = options.url.trim();
  if (url === "" || url.length > MAX_MAP_URL_CHARS) {
    throw new InvalidSourceMapError(
      `Cannot read url "${
        url.slice(0, 40)
      }": expected the minified file's URL, 1 to ${MAX_MAP_URL_CHARS} characters`,
    );
  }
  if (bytes.length > MAX_MAP_BYTES) {
    throw new SourceMapTooLargeError(
      `Cannot store a source map of ${bytes.length} bytes: the most is ${MAX_MAP_BYTES}`,
    );
  }
  const { hasSources } = inspectSourceMap(decoder.decode(bytes));
  const { head, rest } = splitBytes(bytes, SLICE_BYTES);
  const slices = [head, ...rest];
  const record: SourceMapRecord = {
    id: crypto.randomUUID(),
    release,
    url,
    name: (options.name ?? url.split("/").at(-1) ?? url).slice(0, 200),
    bytes: bytes.length,
    slices: slices.length,
    hasSources,
    uploadedAt: options.now,
  };
  await checkRoom(kv, projectId, record, null);
  const loose = sourceMapLooseKey(projectId, record.id);
  await kv.set(loose, looseValue(record, options.now));
  try {
    for (let at = 0; at < slices.length; at += SLICES_PER_COMMIT) {
      const op = kv.atomic();
      slices.slice(at, at + SLICES_PER_COMMIT).forEach((slice, i) =>
        op.set(sourceMapSliceKey(projectId, record.id, at + i), slice)
      );
      await op.commit();
    }
    await commitRecord(kv, projectId, record, options.now);
  } catch (error) {
    await deleteSlices(kv, projectId, record.id);
    throw error;
  }
  await kv.delete(loose);
  return record;
}

/** Throws when `record` would pass a bound, `replaced` going. */
async function checkRoom(
  kv: Deno.Kv,
  projectId: string,
  record: SourceMapRecord,
  replaced: SourceMapRecord | null,
): Promise<SourceMapIndex> {
  const { index } = await readSourceMapIndex(kv, projectId);
  const maps = index.maps + 1 - (replaced ? 1 : 0);
  const bytes = index.bytes + record.bytes - (replaced?.bytes ?? 0);
  if (maps > MAX_MAPS_PER_PROJECT || bytes > MAX_PROJECT_MAP_BYTES) {
    throw new SourceMapTooLargeError(
      `Cannot store source map "${record.name}": the project would have ${maps} maps of ${bytes} bytes, the most is ${MAX_MAPS_PER_PROJECT} maps of ${MAX_PROJECT_MAP_BYTES} bytes; delete the maps of an old release first`,
    );
  }
  return index;
}

/** Makes `record` visible, replacing the release's map of its URL, within the bounds. */
async function commitRecord(
  kv: Deno.Kv,
  projectId: string,
  record: SourceMapRecord,
  now: number,
): Promise<void> {
  for (;;) {
    const [project, indexEntry] = await kv.getMany([
      projectKey(projectId),
      sourceMapIndexKey(projectId),
    ]);
    if (project!.value === null) throw new ProjectNotFoundError(projectId);
    const replaced = (await listSourceMaps(kv, projectId, record.release))
      .find((m) => m.url === record.url) ?? null;
    const index = await checkRoom(kv, projectId, record, replaced);
    const releases = ownReleases(index);
    releases[record.release] = (releases[record.release] ?? 0) + 1 -
      (replaced ? 1 : 0);
    const op = kv.atomic()
      .check(project!)
      .check(indexEntry!)
      .set(
        sourceMapKey(projectId, record.release, record.id),
        encodeJson(record),
      )
      .set(
        sourceMapIndexKey(projectId),
        encodeJson(
          {
            maps: index.maps + 1 - (replaced ? 1 : 0),
            bytes: index.bytes + record.bytes - (replaced?.bytes ?? 0),
            releases,
          } satisfies SourceMapIndex,
        ),
      );
    if (replaced) {
      op.check({
        key: sourceMapKey(projectId, replaced.release, replaced.id),
        versionstamp: (await kv.get(
          sourceMapKey(projectId, replaced.release, replaced.id),
        )).versionstamp,
      });
      op.delete(sourceMapKey(projectId, replaced.release, replaced.id));
      op.set(
        sourceMapLooseKey(projectId, replaced.id),
        looseValue(replaced, now),
      );
    }
    if (!(await op.commit()).ok) continue;
    if (replaced) await deleteSlices(kv, projectId, replaced.id);
    return;
  }
}

function looseValue(map: { release: string }, at: number): Uint8Array {
  return encodeJson({ release: map.release, at } satisfies LooseSlices);
}

/** Deletes a map's slices, then the note that they are loose. */
async function deleteSlices(
  kv: Deno.Kv,
  projectId: string,
  mapId: string,
): Promise<void> {
  await deletePrefix(kv, sourceMapSliceKey(projectId, mapId));
  await kv.delete(sourceMapLooseKey(projectId, mapId));
}

/**
 * Deletes the slices noted loose more than {@linkcode LOOSE_SLICES_MS}
 * before `now` whose map has no record (an upload or a deletion was cut
 * short), and the notes of those whose map has one (an upload whose last
 * step was cut short). Returns how many maps' slices it deleted. A merge
 * round calls it for each project.
 *
 * @example
 * ```ts
 * await sweepLooseSlices(kv, projectId, Date.now());
 * ```
 */
export async function sweepLooseSlices(
  kv: Deno.Kv,
  projectId: string,
  now: number,
): Promise<number> {
  let deleted = 0;
  for await (const note of kv.list({ prefix: sourceMapLooseKey(projectId) })) {
    const loose = decodeJson<LooseSlices>(note.value);
    if (loose !== null && now - loose.at < LOOSE_SLICES_MS) continue;
    const mapId = String(note.key.at(-1));
    const record = loose === null
      ? null
      : await kv.get(sourceMapKey(projectId, loose.release, mapId));
    if (record?.value == null) {
      await deleteSlices(kv, projectId, mapId);
      deleted++;
    } else {
      await kv.atomic().check(note).delete(note.key).commit();
    }
  }
  return deleted;
}

/**
 * A project's source maps, of one release or of all, by release then
 * upload time.
 */
export async function listSourceMaps(
  kv: Deno.Kv,
  projectId: string,
  release?: string,
): Promise<SourceMapRecord[]> {
  const maps = await listJson<SourceMapRecord>(
    kv,
    sourceMapKey(projectId, release),
  );
  return maps.sort((a, b) =>
    a.release === b.release
      ? a.uploadedAt - b.uploadedAt
      : a.release < b.release
      ? -1
      : 1
  );
}

/**
 * A copy of an index's counts with no prototype: a release named
 * `constructor` has no count until it has maps, and one named `__proto__`
 * is a count like any other.
 */
function ownReleases(index: SourceMapIndex): Record<string, number> {
  return Object.assign(Object.create(null), index.releases);
}

/**
 * Deletes a project's source maps, of one release or of all; returns the
 * maps deleted.
 */
export async function deleteSourceMaps(
  kv: Deno.Kv,
  projectId: string,
  release?: string,
): Promise<SourceMapRecord[]> {
  const maps = await listSourceMaps(kv, projectId, release);
  for (const map of maps) {
    for (;;) {
      const { index, entry } = await readSourceMapIndex(kv, projectId);
      const releases = ownReleases(index);
      const left = (releases[map.release] ?? 1) - 1;
      if (left > 0) releases[map.release] = left;
      else delete releases[map.release];
      const result = await kv.atomic()
        .check(entry)
        .delete(sourceMapKey(projectId, map.release, map.id))
        .set(sourceMapLooseKey(projectId, map.id), looseValue(map, Date.now()))
        .set(
          sourceMapIndexKey(projectId),
          encodeJson(
            {
              maps: Math.max(0, index.maps - 1),
              bytes: Math.max(0, index.bytes - map.bytes),
              releases,
            } satisfies SourceMapIndex,
          ),
        )
        .commit();
      if (result.ok) break;
    }
    await deleteSlices(kv, projectId, map.id);
  }
  return maps;
}

/** The text of a stored map. Throws when a slice is missing. */
export async function readSourceMapText(
  kv: Deno.Kv,
  projectId: string,
  map: SourceMapRecord,
): Promise<string> {
  const keys = Array.from(
    { length: map.slices },
    (_, n) => sourceMapSliceKey(projectId, map.id, n),
  );
  const parts = await getManyChunked<Uint8Array>(kv, keys);
  const stream = new TextDecoder();
  let text = "";
  for (const part of parts) {
    if (!(part.value instanceof Uint8Array)) {
      throw new Error(`Cannot read source map "${map.name}": slice missing`);
    }
    text += stream.decode(part.value, { stream: true });
  }
  return text + stream.decode();
}

/**
 * Whether a map uploaded for `mapUrl` describes the file at `frameUrl`: the
 * same URL (query and fragment aside); `~/path`: that path on any origin;
 * else a frame URL that ends with `/` and the map's URL (a file name or a
 * path).
 *
 * @example
 * ```ts
 * mapMatches("app.min.js", "https://shop.example.com/assets/app.min.js?v=3"); // true
 * ```
 */
export function mapMatches(mapUrl: string, frameUrl: string): boolean {
  const url = withoutQuery(frameUrl);
  if (url === mapUrl) return true;
  if (mapUrl.startsWith("~/")) {
    const path = /^[a-z][a-z0-9+.-]*:\/\/[^/]*(\/.*)$/i.exec(url)?.[1];
    return path === mapUrl.slice(1);
  }
  if (/^[a-z][a-z0-9+.-]*:/i.test(mapUrl)) return false;
  const tail = mapUrl.startsWith("/") ? mapUrl : `/${mapUrl}`;
  return url.endsWith(tail);
}

/**
 * `url` up to its first `?` or `#` that no line break follows, in one pass
 * from the end (as `/[?#].*$/` cut it; that pattern ran to the end from
 * every `?`, quadratic in a sender's frame).
 */
function withoutQuery(url: string): string {
  let cut = -1;
  for (let i = url.length - 1; i >= 0; i--) {
    const c = url[i];
    if (c === "?" || c === "#") cut = i;
    else if (c === "\n" || c === "\r" || c === "\u2028" || c === "\u2029") {
      break;
    }
  }
  return cut < 0 ? url : url.slice(0, cut);
}

/** Deletes every source map of a project (when the project is deleted). */
export async function deleteProjectSourceMaps(
  kv: Deno.Kv,
  projectId: string,
): Promise<number> {
  const deleted = await deletePrefix(kv, sourceMapKey(projectId)) +
    await deletePrefix(kv, sourceMapSliceKey(projectId));
  await deletePrefix(kv, sourceMapLooseKey(projectId));
  await kv.delete(sourceMapIndexKey(projectId));
  return deleted;
}
