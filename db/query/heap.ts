/**
 * A binary heap: the engine's merge of sorted runs needs "the first of
 * many" cheaply.
 *
 * @module
 */

/**
 * A binary heap ordered by `first(a, b)`: true when `a` comes before `b`.
 *
 * @example
 * ```ts
 * const heap = new Heap<number>((a, b) => a < b);
 * heap.push(3); heap.push(1);
 * heap.pop(); // 1
 * ```
 */
export class Heap<T> {
  #items: T[] = [];
  #first: (a: T, b: T) => boolean;

  constructor(first: (a: T, b: T) => boolean) {
    this.#first = first;
  }

  get size(): number {
    return this.#items.length;
  }

  /** The first item, left in place. */
  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    const items = this.#items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#first(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  /** Removes and returns the first item. */
  pop(): T | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) {
      items[0] = last;
      this.fix();
    }
    return top;
  }

  /** Restores the order after the first item changed in place. */
  fix(): void {
    const items = this.#items;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let best = i;
      if (left < items.length && this.#first(items[left]!, items[best]!)) {
        best = left;
      }
      if (right < items.length && this.#first(items[right]!, items[best]!)) {
        best = right;
      }
      if (best === i) return;
      [items[i], items[best]] = [items[best]!, items[i]!];
      i = best;
    }
  }
}
