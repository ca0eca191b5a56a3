/**
 * The source map upload for CI pipelines (docs/errors.md#source-maps):
 * `POST /api/v1/projects/:id/sourcemaps?release=R&url=U` with the map as
 * the body and `Authorization: Bearer <token>` of a token whose scope is
 * `upload` (db/tokens.ts). Answers `201` with the stored map, or a JSON
 * `{"error": "…"}`: `401` without a valid token, `403` for a token of
 * another scope, `404` for a project the token is not for, `400` for a bad
 * parameter or a body that is no source map, `413` past a bound
 * (docs/limits.md). `url` is the minified file's URL (or `~/path`, or a
 * file name its URL ends with); without it, the map's own `file`. Each
 * upload is in the project's audit log, by `token:<name> (by <creator>)`,
 * as the CLI's `sourcemap.upload`, and counts against its creator's daily
 * budget of events there (db/audit.ts), whatever the number of its tokens.
 *
 * The body is read here, within the map's bound, not by the dashboard's
 * form guard, whose bound is a form's.
 *
 * @module
 */
import { recordAudit } from "../../db/audit.ts";
import { getProject } from "../../db/projects.ts";
import {
  InvalidSourceMapError,
  MAX_MAP_BYTES,
  SourceMapTooLargeError,
  uploadSourceMap,
} from "../../db/sourcemaps.ts";
import { findReadToken, scopeOf } from "../../db/tokens.ts";
import {
  BodyIncompleteError,
  BodyTimeoutError,
  readBodyWithin,
} from "../security.ts";
import {
  type DashApp,
  type DashboardDeps,
  type DashContext,
  PROJECT_ID,
} from "./common.ts";

/**
 * The upload's path below the dashboard's base: the form guard leaves its
 * bodies alone (the upload bounds them itself), and no other path's.
 */
export const UPLOAD_PATH = /^\/api\/v1\/projects\/[^/]+\/sourcemaps$/;

/** Time a map's bytes may take to arrive whole by default (10 MB at 170 KB/s). */
export const UPLOAD_TIME_MS = 60_000;

function uploadError(
  c: DashContext,
  status: 400 | 401 | 403 | 404 | 408 | 413,
  message: string,
): Response {
  if (status === 401) c.header("WWW-Authenticate", 'Bearer realm="logs"');
  return c.json({ error: message }, status);
}

/** Adds the source map upload. */
export function sourceMapRoutes(app: DashApp, deps: DashboardDeps): void {
  const { kv } = deps;
  app.post(`/api/v1/projects/:id/sourcemaps`, async (c) => {
    const projectId = c.req.param("id");
    const bearer = /^Bearer[ ]+([^\s]+)[ ]*$/i.exec(
      c.req.header("authorization") ?? "",
    );
    const token = bearer ? await findReadToken(kv, bearer[1]!) : null;
    if (token === null) {
      await c.req.raw.body?.cancel().catch(() => {});
      return uploadError(
        c,
        401,
        'Cannot upload: send "Authorization: Bearer <token>" of a token whose scope is "upload"',
      );
    }
    if (
      token.projectId !== projectId || !PROJECT_ID.test(projectId) ||
      await getProject(kv, projectId) === null
    ) {
      await c.req.raw.body?.cancel().catch(() => {});
      return uploadError(c, 404, `Cannot find project "${projectId}"`);
    }
    if (scopeOf(token) !== "upload") {
      await c.req.raw.body?.cancel().catch(() => {});
      return uploadError(
        c,
        403,
        `Cannot upload: the token's scope is "${
          scopeOf(token)
        }"; create one with --scope upload`,
      );
    }
    const bytes = await readMap(c, deps.uploadTimeMs);
    if (bytes instanceof Response) return bytes;
    const params = new URL(c.req.url).searchParams;
    try {
      const url = params.get("url") ?? fileOfMap(bytes);
      const record = await uploadSourceMap(kv, {
        projectId,
        release: params.get("release") ?? "",
        url,
        bytes,
        now: deps.now(),
      });
      await recordAudit(kv, {
        projectId,
        actor: `token:${token.name} (by ${token.createdBy})`,
        chargedTo: token.createdBy,
        action: "sourcemap.upload",
        detail: `1 of release ${record.release}`,
        now: deps.now,
      });
      return c.json({
        id: record.id,
        release: record.release,
        url: record.url,
        bytes: record.bytes,
        hasSources: record.hasSources,
      }, 201);
    } catch (error) {
      return answerKnown(c, error);
    }
  });
}

/** The statuses of the errors an upload answers with their own message. */
const KNOWN_ERRORS: [new (...args: never[]) => Error, 400 | 408 | 413][] = [
  [InvalidSourceMapError, 400],
  [SourceMapTooLargeError, 413],
  [BodyTimeoutError, 408],
  [BodyIncompleteError, 400],
];

/** `error`'s answer when it is one of {@linkcode KNOWN_ERRORS}; else throws it. */
function answerKnown(c: DashContext, error: unknown): Response {
  for (const [kind, status] of KNOWN_ERRORS) {
    if (error instanceof kind) return uploadError(c, status, error.message);
  }
  throw error;
}

/**
 * The map's bytes, read within {@linkcode MAX_MAP_BYTES} and `timeMs`, or
 * the answer that refuses them.
 */
async function readMap(
  c: DashContext,
  timeMs: number,
): Promise<Uint8Array | Response> {
  let bytes;
  try {
    bytes = await readBodyWithin(c.req.raw, MAX_MAP_BYTES, timeMs);
  } catch (error) {
    return answerKnown(c, error);
  }
  return bytes ?? uploadError(
    c,
    413,
    `Cannot store a source map of more than ${MAX_MAP_BYTES} bytes`,
  );
}

/** The `file` a map names, for an upload without `url`. */
function fileOfMap(bytes: Uint8Array): string {
  let file: unknown;
  try {
    file = JSON.parse(new TextDecoder().decode(bytes))?.file;
  } catch {
    file = undefined;
  }
  if (typeof file === "string" && file !== "") return file;
  throw new InvalidSourceMapError(
    'Cannot upload: give "url" (the minified file\'s URL), or a map that names its "file"',
  );
}
