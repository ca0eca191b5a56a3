/**
 * A short-lived cache of project records for the consumer, so that a batch
 * of entries costs at most one KV read per project, and a change made by an
 * operator is seen within `ttlMs` (docs/design.md#project-cache).
 *
 * @module
 */
import { projectKey } from "../db/keys.ts";
import { decodeJson, getManyChunked } from "../db/kv.ts";
import type { Project } from "../db/projects.ts";

/** Options of {@linkcode ProjectCache}. */
export interface ProjectCacheOptions {
  /** How long a record (or its absence) is reused. @default {2000} */
  ttlMs?: number;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** Records kept at most; the oldest go first. @default {10000} */
  maxEntries?: number;
}

interface Cached {
  project: Project | null;
  at: number;
}

/** Reads projects through a cache with a time limit. */
export class ProjectCache {
  #kv: Deno.Kv;
  #ttl: number;
  #now: () => number;
  #max: number;
  #cache = new Map<string, Cached>();

  constructor(kv: Deno.Kv, options: ProjectCacheOptions = {}) {
    this.#kv = kv;
    this.#ttl = options.ttlMs ?? 2000;
    this.#now = options.now ?? Date.now;
    this.#max = options.maxEntries ?? 10_000;
  }

  /** Returns the records of `ids` (`null` for ids with no project). */
  async getMany(ids: Iterable<string>): Promise<Map<string, Project | null>> {
    const now = this.#now();
    const found = new Map<string, Project | null>();
    const missing: string[] = [];
    for (const id of new Set(ids)) {
      const hit = this.#cache.get(id);
      if (hit && now - hit.at < this.#ttl) found.set(id, hit.project);
      else missing.push(id);
    }
    const entries = await getManyChunked(
      this.#kv,
      missing.map((id) => projectKey(id)),
    );
    missing.forEach((id, j) => {
      const project = decodeJson<Project>(entries[j]?.value ?? null);
      found.set(id, project);
      this.#cache.delete(id);
      this.#cache.set(id, { project, at: now });
    });
    while (this.#cache.size > this.#max) {
      this.#cache.delete(this.#cache.keys().next().value!);
    }
    return found;
  }
}
