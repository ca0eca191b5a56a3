/**
 * `deno task sourcemap upload|list|delete PROJECT …`: a project's source
 * maps (db/sourcemaps.ts, docs/errors.md#source-maps). `upload` stores each
 * `FILE.map` for the minified file it describes: the map's `file` (else
 * the file name without `.map`), after `--url-prefix` when given (a URL,
 * or `~/path/` for any origin); without a prefix, a frame matches by the
 * end of its URL. Every change goes to the project's audit log.
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
  deleteSourceMaps,
  inspectSourceMap,
  InvalidSourceMapError,
  listSourceMaps,
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
      return await run(ctx, parsed, projectId, stringFlag(parsed, "release"));
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
      const stored: SourceMapRecord[] = [];
      for (const path of files.filter((f): f is string => f !== undefined)) {
        const bytes = await Deno.readFile(path);
        const name = path.split(/[\\/]/).at(-1)!;
        try {
          const url = urlOf(path, new TextDecoder().decode(bytes), prefix);
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
        } catch (error) {
          if (error instanceof Error) error.message += ` (${name})`;
          throw error;
        }
      }
      await recordCliChange(ctx, {
        projectId,
        action: "sourcemap.upload",
        detail: `${stored.length} of release ${release}`,
      });
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
