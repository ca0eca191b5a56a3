/**
 * What scrubbing costs the consumer (docs/privacy.md#what-it-costs), in
 * process: typical entries of the query bench's generator (no secrets),
 * committed by the real producer and handed to the real consumer as the
 * service does, then the consumer's CPU per entry against the scrubber's
 * own share of it, with the defaults (and with every detector on, for
 * comparison). The target: scrubbing ≤ 15 % of the consumer's CPU per
 * entry with the defaults.
 *
 * ```sh
 * deno run --allow-read --allow-write --allow-env bench/scrub.ts [--count 20000]
 * ```
 *
 * @module
 */
import { parseArgs } from "node:util";
import { ProjectCache } from "../auth/projects.ts";
import { lineFromQueued } from "../db/storage/lines.ts";
import { createProject, type Project } from "../db/projects.ts";
import { addScrubRule, scrubAccepted, scrubberOf } from "../db/scrub.ts";
import { projectKey } from "../db/keys.ts";
import { encodeJson } from "../db/kv.ts";
import { DETECTORS } from "../domain/detectors.ts";
import { type QueuedEntry, toLogRecord } from "../domain/entry.ts";
import { createId } from "../domain/ids.ts";
import type { HandedBatch } from "../queue/batch.ts";
import { Consumer } from "../queue/consumer.ts";
import { GroupCommitter } from "../queue/producer.ts";
import { createGenerator } from "./query/generate.ts";
import { median } from "./timing.ts";

const ORIGIN = "https://shop.example.com";
/** Entries the producer is handed at once, and a batch's entries. */
export const GROUP = 200;
/** Receipt time of the first typical entry. */
export const START = Date.UTC(2026, 10, 26);

/** Typical entries for `project`, one a millisecond from `start`. */
export function typicalEntries(
  projectId: string,
  count: number,
  start: number,
): QueuedEntry[] {
  const generator = createGenerator(7);
  const entries: QueuedEntry[] = [];
  for (let i = 0; i < count; i++) {
    const { appid, level, data, device, context } = generator.next();
    const receivedAt = start + i;
    entries.push({
      id: createId(receivedAt),
      level,
      data,
      device,
      context,
      ...(appid === undefined ? { origin: ORIGIN } : { appid }),
      receivedAt,
      projectId,
    });
  }
  return entries;
}

/**
 * Runs `fn` on a database of its own in memory, closed after: each
 * measurement starts from an empty one.
 *
 * @example
 * ```ts
 * const micros = await withMemoryKv((kv) => timeSomething(kv));
 * ```
 */
export async function withMemoryKv<T>(
  fn: (kv: Deno.Kv) => Promise<T>,
): Promise<T> {
  const kv = await Deno.openKv(":memory:");
  try {
    return await fn(kv);
  } finally {
    kv.close();
  }
}

/**
 * The bench's project `name`, allowing the typical entries' origin, made
 * at {@linkcode START}, then what `variants` makes of it in the same
 * database (rules added). The consumer is handed the records alone.
 *
 * @example
 * ```ts
 * const [project] = await benchProjects("quota bench");
 * ```
 */
export function benchProjects(
  name: string,
  variants: (kv: Deno.Kv, project: Project) => Promise<Project[]> = () =>
    Promise.resolve([]),
): Promise<[Project, ...Project[]]> {
  return withMemoryKv(async (kv) => {
    const project = await createProject(kv, {
      name,
      allow: [ORIGIN],
      now: () => START,
    });
    return [project, ...await variants(kv, project)];
  });
}

/**
 * The consumer's time per entry, µs, over `entries` committed and handed
 * over; `setup` readies the database first (source maps, for
 * bench/sourcemap.ts).
 */
export async function consumerMicros(
  project: Project,
  entries: QueuedEntry[],
  setup?: (kv: Deno.Kv) => Promise<void>,
): Promise<number> {
  return await withMemoryKv(async (kv) => {
    const now = () => entries.at(-1)!.receivedAt;
    await kv.set(projectKey(project.id), encodeJson(project));
    await setup?.(kv);
    const handed: HandedBatch[] = [];
    const producer = new GroupCommitter({
      kv,
      now,
      maxPending: 100_000,
      onCommitted: (batches) => handed.push(...batches),
    });
    for (let at = 0; at < entries.length; at += GROUP) {
      await Promise.all(
        entries.slice(at, at + GROUP).map((e) => producer.submit(e)),
      );
    }
    await producer.flush();
    const consumer = new Consumer({
      kv,
      now,
      maxSkewMs: 300_000,
      projects: new ProjectCache(kv, { ttlMs: 3_600_000, now }),
    });
    const began = performance.now();
    for (const batch of handed) await consumer.process(batch.id, batch);
    return (performance.now() - began) * 1000 / entries.length;
  });
}

/** The scrubber's own time per entry, µs, on the consumer's fast path. */
function scrubMicros(
  project: Project,
  entries: QueuedEntry[],
): { micros: number; parsed: number; changed: number } {
  const texts = entries.map((e) => JSON.stringify(e));
  const lines = entries.map((e, i) => lineFromQueued(texts[i]!, e, "origin"));
  const records = entries.map((e) => toLogRecord(e, "origin"));
  let changed = 0;
  const began = performance.now();
  for (let i = 0; i < entries.length; i++) {
    const out = scrubAccepted(project, records[i]!, lines[i]);
    if (out.record !== records[i]) changed++;
  }
  const micros = (performance.now() - began) * 1000 / entries.length;
  const scrubber = scrubberOf(project);
  const parsed =
    lines.filter((line) =>
      scrubber.candidate(line!.slice(line!.indexOf('","level":')))
    ).length;
  return { micros, parsed, changed };
}

/** `--count` (entries, 20,000) and `--rounds` (5) of the command line. */
export function countAndRounds(): { count: number; rounds: number } {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      count: { type: "string", default: "20000" },
      rounds: { type: "string", default: "5" },
    },
  });
  return { count: Number(values.count), rounds: Number(values.rounds) };
}

if (import.meta.main) {
  const { count, rounds } = countAndRounds();
  const [defaults, detectors] = await benchProjects(
    "scrub bench",
    async (kv, project) => {
      let detectors = project;
      for (const detector of DETECTORS) {
        detectors = (await addScrubRule(kv, project.id, {
          kind: "detector",
          detector,
        })).project;
      }
      return [detectors];
    },
  );
  const entries = typicalEntries(defaults.id, count, START);
  for (
    const [name, project] of [["defaults", defaults], [
      "every detector",
      detectors!,
    ]] as const
  ) {
    const consumer: number[] = [];
    const scrub: number[] = [];
    let last = { micros: 0, parsed: 0, changed: 0 };
    for (let round = 0; round < rounds; round++) {
      consumer.push(await consumerMicros(project, entries));
      last = scrubMicros(project, entries);
      scrub.push(last.micros);
    }
    const c = median(consumer);
    const s = median(scrub);
    console.log(
      `${name}: consumer ${c.toFixed(2)} µs/entry, scrubbing ${
        s.toFixed(3)
      } µs/entry = ${
        (100 * s / c).toFixed(1)
      } %; entries parsed ${last.parsed}/${count}, changed ${last.changed}`,
    );
  }
}
