/**
 * Fixtures of the aggregation suites: entries over four hours with known
 * services, users, levels and statuses (one service in four missing), and
 * the answers a pipe must give, counted here by hand from the same records.
 *
 * @module
 */
import type { LogRecord } from "../../domain/entry.ts";
import { fixtureTest } from "./fixture.ts";
import { withKv } from "./harness.ts";
import { HOUR, queryProject, recordAt, storeBatch, T0 } from "./query.ts";

const SERVICES = ["api", "web", "worker", undefined] as const;

/** The records of hour `h` (0 to 3): 10 + 3h of them, a minute apart. */
function hourRecords(h: number): LogRecord[] {
  return Array.from({ length: 10 + 3 * h }, (_, i) => {
    const service = SERVICES[i % 4];
    const level = i % 5 === 0 ? "error" : i % 7 === 0 ? "critical" : "info";
    return recordAt(T0 + h * HOUR + i * 60_000, {
      level,
      data: { title: `Entry ${h}.${i}`, status: i % 3 === 0 ? 502 : 200 },
      context: {
        userId: `user_${(i * 7 + h) % 5}`,
        ...(service === undefined ? {} : { service }),
      },
    });
  });
}

/** Every record of the fixture, oldest first. */
export const PIPE_RECORDS: readonly LogRecord[] = [0, 1, 2, 3].flatMap(
  hourRecords,
);

/** Stores the fixture, one batch per hour; returns the project's id. */
export async function storePipeRecords(kv: Deno.Kv): Promise<string> {
  const projectId = await queryProject(kv);
  for (let h = 0; h < 4; h++) await storeBatch(kv, projectId, hourRecords(h));
  return projectId;
}

/** Runs `fn` on an in-memory KV holding the fixture, given its project's id. */
export async function withPipeRecords(
  fn: (kv: Deno.Kv, projectId: string) => Promise<void>,
): Promise<void> {
  await withKv(async (kv) => await fn(kv, await storePipeRecords(kv)));
}

/** A test run inside {@linkcode withPipeRecords}. */
export const pipeRecordsTest = fixtureTest(withPipeRecords);

/** Counts of `key` over the records `keep` admits, largest first, ties by key. */
export function countsBy<K extends string | number | null>(
  keep: (r: LogRecord) => boolean,
  key: (r: LogRecord) => K,
): [K, number][] {
  const counts = new Map<K, number>();
  for (const r of PIPE_RECORDS) {
    if (keep(r)) counts.set(key(r), (counts.get(key(r)) ?? 0) + 1);
  }
  return [...counts].sort((a, b) =>
    b[1] - a[1] ||
    (a[0] === null
      ? 1
      : b[0] === null
      ? -1
      : String(a[0]) < String(b[0])
      ? -1
      : 1)
  );
}

/** Whether a record is an error or a critical. */
export function severe(r: LogRecord): boolean {
  return r.level === "error" || r.level === "critical";
}

/** The `context.service` of a record, `null` when missing. */
export function serviceOf(r: LogRecord): string | null {
  return (r.context.service as string | undefined) ?? null;
}

/** A count of the severe records by hour and service. */
export const SEVERE_BY_HOUR =
  "level>=error | count by (time 1h, context.service)";

/** The rows {@linkcode SEVERE_BY_HOUR} must give, largest first. */
export function severeByHour(): {
  time: string;
  "context.service": string | null;
  count: number;
}[] {
  return countsBy(
    severe,
    (r) => JSON.stringify([hourOf(r), serviceOf(r)]),
  ).map(([key, count]) => {
    const [time, service] = JSON.parse(key);
    return { time, "context.service": service, count };
  });
}

/** The start of the hour of a record, as ISO 8601. */
export function hourOf(r: LogRecord): string {
  return new Date(Math.floor(r.receivedAt / HOUR) * HOUR).toISOString();
}
