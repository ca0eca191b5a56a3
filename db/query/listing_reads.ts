/**
 * The reads a search's listing takes its keys in (summaries, Bloom filters,
 * ungrouped marks; db/query/listing.ts): few at first, since a page or a
 * tail needs few, more once the listing goes on, and then each read
 * started before the caller works on the keys of the one before.
 *
 * @module
 */

/**
 * Keys one read of a listing returns at most, once it has grown (four
 * times its first read, within this): 400 Bloom filters are about 2 MB.
 */
const LIST_READ_MAX = 1000;

/**
 * A listing of KV entries in reads that grow (`first`, then four times as
 * many, within {@linkcode LIST_READ_MAX}); from its fourth read on, each
 * starts as soon as the one before is handed over, so its wait overlaps
 * the caller's work on those entries. A listing that stops within its first
 * two reads (a page, a tail) never reads ahead.
 */
export class ListingReads {
  readonly #kv: Deno.Kv;
  readonly #selector: Deno.KvListSelector;
  readonly #reverse: boolean;
  #size: number;
  readonly #max: number;
  #reads = 0;
  #entries: Deno.KvEntry<unknown>[] = [];
  #at = 0;
  /** The next read: started ahead, or to start; null: the listing ended. */
  #next:
    | Promise<{ entries: Deno.KvEntry<unknown>[]; cursor: string | null }>
    | null = null;
  #cursor: string | null | undefined = undefined;

  constructor(
    kv: Deno.Kv,
    selector: Deno.KvListSelector,
    reverse: boolean,
    first: number,
  ) {
    this.#kv = kv;
    this.#selector = selector;
    this.#reverse = reverse;
    this.#size = first;
    this.#max = Math.min(LIST_READ_MAX, first * 4);
  }

  /** The next entry; `done` once the listing is over. */
  async next(): Promise<IteratorResult<Deno.KvEntry<unknown>, undefined>> {
    while (this.#at >= this.#entries.length) {
      if (this.#cursor === null) return { done: true, value: undefined };
      const read = this.#next ?? this.#read();
      this.#next = null;
      const { entries, cursor } = await read;
      this.#entries = entries;
      this.#at = 0;
      this.#cursor = cursor;
      if (cursor !== null && this.#reads >= 3) {
        const ahead = this.#read();
        // A listing left before it takes these hears nothing of a failure.
        ahead.catch(() => {});
        this.#next = ahead;
      }
    }
    return { done: false, value: this.#entries[this.#at++]! };
  }

  #read(): Promise<
    { entries: Deno.KvEntry<unknown>[]; cursor: string | null }
  > {
    const size = this.#size;
    this.#size = this.#max;
    this.#reads++;
    const list = this.#kv.list(this.#selector, {
      reverse: this.#reverse,
      batchSize: size,
      limit: size,
      ...(this.#cursor ? { cursor: this.#cursor } : {}),
    });
    return (async () => {
      const entries: Deno.KvEntry<unknown>[] = [];
      for await (const entry of list) entries.push(entry);
      return { entries, cursor: entries.length < size ? null : list.cursor };
    })();
  }
}
