/**
 * One way for every command to find the project an argument names: its id,
 * or else its name (exact, then ignoring case). A name that several
 * projects share is refused with their ids, so that no command acts on the
 * wrong one.
 *
 * @module
 */
import {
  getProject,
  listProjects,
  type Project,
  ProjectNotFoundError,
} from "../db/projects.ts";

/** Thrown when a name is shared by several projects. */
export class AmbiguousProjectError extends Error {
  override name = "AmbiguousProjectError";
  /** The ids of the projects of that name. */
  ids: string[];
  constructor(name: string, ids: string[]) {
    super(
      // The name is the operator's own argument, printed as typed.
      `Cannot tell which project "${name}" is: ${ids.length} projects have that name (${
        ids.join(", ")
      }); give the id instead`,
    );
    this.ids = ids;
  }
}

/**
 * The project whose id, or else whose name, is `idOrName`. Throws
 * {@linkcode ProjectNotFoundError} when none matches and
 * {@linkcode AmbiguousProjectError} when a name matches several.
 *
 * @example
 * ```ts
 * const project = await resolveProject(ctx.kv, "web shop");
 * ```
 */
export async function resolveProject(
  kv: Deno.Kv,
  idOrName: string,
): Promise<Project> {
  const byId = await getProject(kv, idOrName);
  if (byId !== null) return byId;
  const all = await listProjects(kv);
  let found = all.filter((p) => p.name === idOrName);
  if (found.length === 0) {
    const lower = idOrName.toLowerCase();
    found = all.filter((p) => p.name.toLowerCase() === lower);
  }
  if (found.length === 1) return found[0]!;
  if (found.length > 1) {
    throw new AmbiguousProjectError(
      idOrName,
      found.sort((a, b) => a.createdAt - b.createdAt).map((p) => p.id),
    );
  }
  throw new ProjectNotFoundError(idOrName);
}

/**
 * The id of the project named `idOrName` (see {@linkcode resolveProject}).
 *
 * @example
 * ```ts
 * const projectId = await projectIdOf(ctx.kv, "Web shop");
 * ```
 */
export async function projectIdOf(
  kv: Deno.Kv,
  idOrName: string,
): Promise<string> {
  return (await resolveProject(kv, idOrName)).id;
}
