/**
 * `deno task bench:pipeline`: the queue and storage of one process (producer,
 * consumer, merger; queue/pipeline.ts) driven in process at a fixed rate or
 * in a burst, without HTTP, to see what an entry costs them and why: CPU per
 * entry by thread (the isolate, KV's SQLite writer, the collector's helpers)
 * from /proc (Linux only), KV commits and mutations per entry, and the entries
 * the merger rewrote per entry accepted (write amplification). The HTTP side
 * and the whole process tree are `deno task bench`'s (bench/cost.ts).
 *
 * ```sh
 * deno task bench:pipeline                      # 2,000 entries/s for 8 s
 * deno task bench:pipeline --rate 200 --linger 0
 * deno task bench:pipeline --rate 0             # a burst: 128 clients, no wait
 * deno task bench:pipeline --no-merge           # the merger left out
 * deno task bench:pipeline --driver-only        # the driver's own cost, to subtract
 * ```
 *
 * Clients are one per 40 entries/s (at least 10), each waiting between two
 * entries, as the HTTP bench's connections do. After the load the worker is
 * let finish and one merge round runs as if 31 s had passed, so that every
 * run of chunks settles and its rewrites are counted.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { createProject } from "../db/projects.ts";
import { mergeAll, type QuietProjects } from "../db/storage/merge.ts";
import type { QueuedEntry } from "../domain/entry.ts";
import { createId } from "../domain/ids.ts";
import { createPipeline, type Pipeline } from "../queue/pipeline.ts";
import { threadSeconds } from "./cpu.ts";
import { wholeNumber } from "./options.ts";
import { createGenerator } from "./query/generate.ts";

const ORIGIN = "https://bench.example";

/** KV commits and mutations made through `kv` since it was wrapped. */
export interface Counts {
  commits: number;
  mutations: number;
}

/**
 * `kv` whose atomic operations count their commits and mutations into
 * `counts`; everything else is `kv`'s own.
 *
 * @example
 * ```ts
 * const counts = { commits: 0, mutations: 0 };
 * await countingKv(kv, counts).atomic().set(["a"], 1).commit(); // counts: 1, 1
 * ```
 */
export function countingKv(kv: Deno.Kv, counts: Counts): Deno.Kv {
  const atomic = () => {
    const op = kv.atomic();
    return new Proxy(op, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (typeof value !== "function") return value;
        if (name === "commit") counts.commits++;
        else if (name === "set" || name === "delete" || name === "sum") {
          counts.mutations++;
        }
        return (...args: unknown[]) => {
          const result = value.apply(target, args);
          return result === target ? receiver : result;
        };
      },
    });
  };
  return new Proxy(kv, {
    get(target, name) {
      if (name === "atomic") return atomic;
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Options of a run, from the command line. */
export interface PipelineBenchOptions {
  /** Entries per second offered; 0: a burst of 128 clients. */
  rate: number;
  seconds: number;
  /** The producer's linger, ms; undefined: its default. */
  linger: number | undefined;
  merge: boolean;
  /** Only make the entries, queue nothing: the driver's own cost. */
  driverOnly: boolean;
}

/**
 * Parses the command line; throws a `RangeError` naming the option at fault.
 *
 * @example
 * ```ts
 * parseBenchOptions(["--rate", "200"]).rate; // 200
 * ```
 */
export function parseBenchOptions(args: string[]): PipelineBenchOptions {
  const { values } = parseArgs({
    args,
    options: {
      rate: { type: "string", default: "2000" },
      seconds: { type: "string", default: "8" },
      linger: { type: "string" },
      "no-merge": { type: "boolean", default: false },
      "driver-only": { type: "boolean", default: false },
    },
  });
  return {
    rate: wholeNumber("rate", values.rate, 0, 100_000),
    seconds: wholeNumber("seconds", values.seconds, 1, 600),
    linger: values.linger === undefined
      ? undefined
      : wholeNumber("linger", values.linger, 0, 1000),
    merge: !values["no-merge"],
    driverOnly: values["driver-only"],
  };
}

/** Offers entries from every client until `end`; returns those accepted. */
async function drive(
  pipeline: Pipeline | null,
  projectId: string,
  options: PipelineBenchOptions,
  end: number,
): Promise<number> {
  const clients = options.rate === 0
    ? 128
    : Math.max(10, Math.round(options.rate / 40));
  const period = options.rate === 0 ? 0 : 1000 * clients / options.rate;
  const generator = createGenerator(1);
  let accepted = 0;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (Date.now() < end) {
      const at = Date.now();
      // Through JSON, as a request's body arrives.
      const body = JSON.parse(
        JSON.stringify({ ...generator.next(), projectId }),
      );
      const entry = {
        id: createId(at),
        ...body,
        origin: ORIGIN,
        receivedAt: at,
      } as QueuedEntry;
      try {
        await pipeline?.producer.submit(entry);
        accepted++;
      } catch {
        // Refused (503): not counted.
      }
      const wait = period - (Date.now() - at);
      if (wait > 0) await new Promise((go) => setTimeout(go, wait));
    }
  }));
  return accepted;
}

/** Runs merge rounds back to back while they find work, until stopped. */
function mergeLoop(kv: Deno.Kv, rewritten: { entries: number }) {
  let stopped = false;
  const quiet: QuietProjects = new Map();
  const done = (async () => {
    while (!stopped) {
      const round = await mergeAll(kv, {
        now: Date.now(),
        maxMerges: 32,
        quiet,
      });
      rewritten.entries += round.entries;
      if (round.merges === 0) await new Promise((go) => setTimeout(go, 1000));
    }
  })();
  return async () => {
    stopped = true;
    await done;
  };
}

function perEntry(n: number, accepted: number, digits = 0): string {
  return (n / Math.max(1, accepted)).toFixed(digits);
}

async function main(): Promise<void> {
  const options = parseBenchOptions(Deno.args);
  const dir = await Deno.makeTempDir({ prefix: "bench-pipeline-" });
  const real = await Deno.openKv(`${dir}/kv.sqlite`);
  const counts: Counts = { commits: 0, mutations: 0 };
  const kv = countingKv(real, counts);
  const rewritten = { entries: 0 };
  let stopMerging: (() => Promise<void>) | null = null;
  try {
    const project = await createProject(real, {
      name: "bench",
      allow: [ORIGIN],
    });
    const pipeline = options.driverOnly ? null : createPipeline({
      kv,
      config: {
        consumerConcurrency: 4,
        maxPendingRequests: 20_000,
        projectCacheMs: 60_000,
        signatureMaxSkewMs: 300_000,
      },
      mergeIntervalMs: 0,
      ...(options.linger === undefined ? {} : { lingerMs: options.linger }),
    });
    pipeline?.start();
    stopMerging = options.merge && pipeline ? mergeLoop(kv, rewritten) : null;
    const before = await threadSeconds(Deno.pid);
    const end = Date.now() + options.seconds * 1000;
    const accepted = await drive(pipeline, project.id, options, end);
    await pipeline?.producer.flush();
    await pipeline?.worker.idle();
    await stopMerging?.();
    if (options.merge && pipeline) {
      const settle = await mergeAll(kv, { now: Date.now() + 31_000 });
      rewritten.entries += settle.entries;
    }
    const after = await threadSeconds(Deno.pid);
    report(options, accepted, counts, rewritten.entries, before, after);
    await pipeline?.stop();
  } finally {
    await stopMerging?.();
    real.close();
    await Deno.remove(dir, { recursive: true });
  }
}

function report(
  options: PipelineBenchOptions,
  accepted: number,
  counts: Counts,
  rewritten: number,
  before: Map<string, number>,
  after: Map<string, number>,
): void {
  let total = 0;
  const threads: string[] = [];
  for (const [name, seconds] of after) {
    const used = seconds - (before.get(name) ?? 0);
    total += used;
    if (used > 0) threads.push(`${name} ${perEntry(used * 1e6, accepted)}`);
  }
  const load = options.rate === 0 ? "burst" : `${options.rate}/s`;
  console.log(
    `${load}, ${options.seconds} s: ${accepted} entries accepted`,
  );
  console.log(
    `CPU ${perEntry(total * 1e6, accepted)} µs per entry; by thread (µs): ${
      threads.join(", ")
    }`,
  );
  console.log(
    `KV commits ${perEntry(counts.commits, accepted, 3)} and mutations ${
      perEntry(counts.mutations, accepted, 2)
    } per entry; merges rewrote ${perEntry(rewritten, accepted, 2)} per entry`,
  );
}

if (import.meta.main) await main();
