/**
 * Named locks for the consumer: one commit at a time per ring of recent
 * rejections in this process.
 *
 * @module
 */

/**
 * Named locks held in arrival order: `hold(names, fn)` runs `fn` once every
 * earlier holder of any of `names` has finished. Names are taken all at once,
 * so two holders never wait for each other.
 *
 * @example
 * ```ts
 * const locks = new Locks();
 * await locks.hold(["ring"], () => commit());
 * ```
 */
export class Locks {
  #last = new Map<string, Promise<void>>();

  async hold<T>(names: string[], fn: () => Promise<T>): Promise<T> {
    if (names.length === 0) return await fn();
    const unique = [...new Set(names)];
    const before = unique.map((n) => this.#last.get(n));
    let release!: () => void;
    const mine = new Promise<void>((resolve) => release = resolve);
    for (const name of unique) this.#last.set(name, mine);
    await Promise.all(before);
    try {
      return await fn();
    } finally {
      release();
      for (const name of unique) {
        if (this.#last.get(name) === mine) this.#last.delete(name);
      }
    }
  }
}
