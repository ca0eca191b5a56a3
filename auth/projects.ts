/**
 * A short-lived cache of project records for the consumer, so that a batch
 * of entries costs at most one KV read per project. Each record is kept with
 * the versionstamp it was read at: the consumer commits its results only if
 * the records it judged with are still current, and reads them again when
 * they are not (docs/design.md#project-cache), so a cached record never
 * decides an entry after an operator changed or deleted it.
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

/** A project record as read, with the versionstamp to check it by. */
export interface ProjectRead {
  /** The record, `null` when no project has the id. */
  project: Project | null;
  /** Versionstamp of the record, `null` when there is none. */
  versionstamp: string | null;
}

interface Cached extends ProjectRead {
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

  /**
   * Returns the records of `ids`, from the cache when read within the time
   * limit, else from KV (`project: null` for ids with no project).
   */
  async getMany(ids: Iterable<string>): Promise<Map<string, ProjectRead>> {
    const now = this.#now();
    const found = new Map<string, ProjectRead>();
    const missing: string[] = [];
    for (const id of new Set(ids)) {
      const hit = this.#cache.get(id);
      if (hit && now - hit.at < this.#ttl) found.set(id, hit);
      else missing.push(id);
    }
    const entries = await getManyChunked(
      this.#kv,
      missing.map((id) => projectKey(id)),
    );
    missing.forEach((id, j) => found.set(id, this.remember(id, entries[j]!)));
    return found;
  }

  /**
   * Keeps a record just read from KV (by whoever read it) and returns it in
   * the form {@linkcode getMany} does.
   *
   * @example
   * ```ts
   * const fresh = cache.remember(id, await kv.get(projectKey(id)));
   * ```
   */
  remember(id: string, entry: Deno.KvEntryMaybe<unknown>): ProjectRead {
    const read: Cached = {
      project: decodeJson<Project>(entry.value),
      versionstamp: entry.versionstamp,
      at: this.#now(),
    };
    this.#cache.delete(id);
    this.#cache.set(id, read);
    while (this.#cache.size > this.#max) {
      this.#cache.delete(this.#cache.keys().next().value!);
    }
    return read;
  }
}
