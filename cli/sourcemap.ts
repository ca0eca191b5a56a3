/**
 * `deno task sourcemap upload|list|delete PROJECT …`: a project's source
 * maps (db/sourcemaps.ts, docs/errors.md#source-maps). `upload` stores each
 * `FILE.map` for the minified file it describes: the map's `file` (else
 * the file name without `.map`), after `--url-prefix` when given (a URL,
 * or `~/path/` for any origin); without a prefix, a frame matches by the
 * end of its URL. A file is read within the bound of one map, and only if it
 * is a regular file. Every change goes to the project's audit log.
 *
 * @module
 */
import { recordCliChange } from "./audit.ts";
import {
  type CommandContext,
  flags,
  type Parsed,
  requiredFlag,
  stringFlag,
} from "./command.ts";
import { formatTime, inert } from "./format.ts";
import { printList, printResult } from "./output.ts";
import { projectIdOf } from "./resolve.ts";
import {
  dispatch,
  JSON_FLAG,
  type Subcommand,
  subcommand,
  type Subcommands,
} from "./subcommands.ts";
import {
  checkRelease,
  deleteSourceMaps,
  inspectSourceMap,
  InvalidSourceMapError,
  listSourceMaps,
  MAX_MAP_BYTES,
  type SourceMapRecord,
  SourceMapTooLargeError,
  uploadSourceMap,
} from "../db/sourcemaps.ts";

/** Maps one `upload` takes at most. */
export const MAX_UPLOAD_FILES = 100;

const USAGE: Record<string, string> = {
  "": `Manage a project's source maps, which resolve minified stack frames.

Usage: deno task sourcemap <command> [options]

Commands:
  upload PROJECT --release R [--url-prefix P] FILE.map…
                                   Store maps of a release
  list PROJECT [--release R]       List the maps (of a release)
  delete PROJECT [--release R]     Delete the maps (of a release, else all)

Every command takes --json (machine output) and --help.`,
  upload: `Store source maps of a release.

Usage: deno task sourcemap upload PROJECT --release R [--url-prefix P] FILE.map… [--json]

Each map applies to the minified file it names ("file"), else to its own
name without ".map". With --url-prefix (https://shop.example.com/assets/,
or ~/assets/ for any origin) that is the file's URL; without it, a frame
matches by the end of its URL. A map of the same release and URL is replaced.

Options:
  --release R      The release the bundle was built as (context.release)
  --url-prefix P   Where the minified files are served
  --json           Print one JSON array of the stored maps`,
  list: `List a project's source maps.

Usage: deno task sourcemap list PROJECT [--release R] [--json]`,
  delete: `Delete a project's source maps, of one release or all.

Usage: deno task sourcemap delete PROJECT [--release R] [--json]`,
};

/** A map as printed by `--json`. */
export function sourceMapJson(map: SourceMapRecord): Record<string, unknown> {
  return {
    id: map.id,
    release: map.release,
    url: map.url,
    name: map.name,
    bytes: map.bytes,
    hasSources: map.hasSources,
    uploadedAt: new Date(map.uploadedAt).toISOString(),
  };
}

/** The URL a map file is stored for. */
function urlOf(path: string, text: string, prefix: string | undefined): string {
  const base = path.split(/[\\/]/).at(-1)!;
  const file = inspectSourceMap(text).file?.split("/").at(-1) ??
    base.replace(/\.map$/, "");
  if (prefix === undefined) return file;
  return prefix.endsWith("/") ? prefix + file : `${prefix}/${file}`;
}

/**
 * The map file at `path` read and checked for upload: its name, the URL of
 * its minified file and its bytes; a message naming the file when it is no
 * source map.
 */
async function readUpload(
  path: string,
  prefix: string | undefined,
): Promise<{ name: string; url: string; bytes: Uint8Array }> {
  const name = path.split(/[\\/]/).at(-1)!;
  const bytes = await readMapFile(path, name);
  try {
    return {
      name,
      url: urlOf(path, new TextDecoder().decode(bytes), prefix),
      bytes,
    };
  } catch (error) {
    if (error instanceof Error) error.message += ` (${name})`;
    throw error;
  }
}

/** Bytes one read of a map file takes at most. */
const READ_BYTES = 1 << 20;

/**
 * The bytes of the map file at `path` (`name` in messages), read within
 * {@linkcode MAX_MAP_BYTES}: a path that is no regular file (a directory, a
 * FIFO, `/dev/zero`) is refused without being read, a file larger than the
 * bound at its size, and one that grows while it is read once it passes
 * the bound.
 */
async function readMapFile(path: string, name: string): Promise<Uint8Array> {
  const tooLarge = (size: string) =>
    new SourceMapTooLargeError(
      `Cannot store a source map of ${size} bytes: the most is ${MAX_MAP_BYTES} (${name})`,
    );
  const info = await statFile(path);
  if (info.size > MAX_MAP_BYTES) throw tooLarge(String(info.size));
  const file = await Deno.open(path);
  try {
    const chunks: Uint8Array[] = [];
    let total = 0;
    for (;;) {
      const chunk = new Uint8Array(READ_BYTES);
      const n = await file.read(chunk);
      if (n === null) break;
      chunks.push(chunk.subarray(0, n));
      total += n;
      if (total > MAX_MAP_BYTES) throw tooLarge(`more than ${MAX_MAP_BYTES}`);
    }
    const bytes = new Uint8Array(total);
    let at = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, at);
      at += chunk.length;
    }
    return bytes;
  } finally {
    file.close();
  }
}

/** `path`'s information, refused unless it is a regular file. */
async function statFile(path: string): Promise<Deno.FileInfo> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new InvalidSourceMapError(`Cannot read "${path}": no such file`);
    }
    throw error;
  }
  if (!info.isFile) {
    throw new InvalidSourceMapError(
      `Cannot read "${path}": not a regular file`,
    );
  }
  return info;
}

const FILES = [
  "PROJECT",
  "FILE",
  ...Array.from({ length: MAX_UPLOAD_FILES - 1 }, () => "FILE?"),
] as readonly string[];

/**
 * A subcommand of `PROJECT [--release R]`: `run` gets the project's id and
 * the release, `undefined` for every release.
 */
function ofRelease(
  run: (
    ctx: CommandContext,
    parsed: Parsed,
    projectId: string,
    release: string | undefined,
  ) => Promise<number>,
): Subcommand {
  return subcommand({
    positionals: ["PROJECT"],
    options: flags({ string: ["release"], boolean: ["json"] }),
    async run(ctx, parsed, [named]) {
      const projectId = await projectIdOf(ctx.kv, named);
      const release = stringFlag(parsed, "release");
      // Refused as an upload refuses it, before any key is made of it.
      if (release !== undefined) checkRelease(release);
      return await run(ctx, parsed, projectId, release);
    },
  });
}

const SUBCOMMANDS: Subcommands = {
  upload: subcommand({
    positionals: FILES,
    options: {
      ...JSON_FLAG,
      release: { type: "string" },
      "url-prefix": { type: "string" },
    },
    async run(ctx, parsed, [named, ...files]) {
      const projectId = await projectIdOf(ctx.kv, named!);
      const release = requiredFlag(parsed, "sourcemap upload", "release", "R");
      const prefix = stringFlag(parsed, "url-prefix");
      checkRelease(release);
      const paths = files.filter((f): f is string => f !== undefined);
      // Every file read and checked before any is stored (one at a time, so
      // that no more than one map is held): a bad one stores nothing.
      for (const path of paths) await readUpload(path, prefix);
      const stored: SourceMapRecord[] = [];
      try {
        for (const path of paths) {
          const { name, url, bytes } = await readUpload(path, prefix);
          stored.push(
            await uploadSourceMap(ctx.kv, {
              projectId,
              release,
              url,
              name,
              bytes,
              now: ctx.now(),
            }),
          );
        }
      } catch (error) {
        if (error instanceof Error && stored.length > 0) {
          error.message +=
            ` after ${stored.length} stored (see "deno task sourcemap list")`;
        }
        throw error;
      } finally {
        if (stored.length > 0) {
          await recordCliChange(ctx, {
            projectId,
            action: "sourcemap.upload",
            detail: `${stored.length} of release ${release}`,
          });
        }
      }
      return printResult(ctx, parsed, {
        json: stored.map(sourceMapJson),
        text: stored.map((m) =>
          `Stored ${inert(m.name)} (${m.bytes} bytes${
            m.hasSources ? "" : ", without sources"
          }) for ${inert(m.url)} in release ${inert(m.release)}`
        ),
      });
    },
  }),
  list: ofRelease(
    async (ctx, parsed, projectId, release) => {
      const maps = await listSourceMaps(ctx.kv, projectId, release);
      return printList(ctx, parsed, maps, {
        toJson: sourceMapJson,
        empty: `No source maps${
          release === undefined ? "" : ` of release ${inert(release)}`
        }: upload some with "deno task sourcemap upload ${projectId} --release R FILE.map"`,
        header: ["RELEASE", "URL", "BYTES", "SOURCES", "UPLOADED"],
        row: (m) => [
          inert(m.release),
          inert(m.url),
          String(m.bytes),
          m.hasSources ? "yes" : "no",
          formatTime(m.uploadedAt),
        ],
      });
    },
  ),
  delete: ofRelease(
    async (ctx, parsed, projectId, release) => {
      const deleted = await deleteSourceMaps(ctx.kv, projectId, release);
      await recordCliChange(ctx, {
        projectId,
        action: "sourcemap.delete",
        detail: `${deleted.length} of ${
          release === undefined ? "every release" : `release ${release}`
        }`,
      });
      return printResult(ctx, parsed, {
        json: deleted.map(sourceMapJson),
        text: `Deleted ${deleted.length} source ${
          deleted.length === 1 ? "map" : "maps"
        }${release === undefined ? "" : ` of release ${inert(release)}`}`,
      });
    },
  ),
};

/**
 * `deno task sourcemap <command> …`.
 *
 * @example
 * ```ts
 * await sourcemapCommand({ ...ctx, args: ["upload", projectId, "--release", "1.0.0", "app.min.js.map"] });
 * ```
 */
export function sourcemapCommand(ctx: CommandContext): Promise<number> {
  return dispatch(ctx, {
    command: "sourcemap",
    usage: USAGE,
    subcommands: SUBCOMMANDS,
    failures: [InvalidSourceMapError, SourceMapTooLargeError],
  });
}
