/**
 * The turns of the ingestion benchmark (bench/ingest.ts): wrk against the
 * service and the bare server in alternation, for every connection count,
 * and after each service turn the wait until the service has stored what it
 * accepted (the drain).
 *
 * @module
 */
import type { BenchOptions } from "./options.ts";
import { formatCount, formatMs, type TurnResult } from "./report.ts";
import type { ServerProcess } from "./server.ts";
import { waitForDrain } from "./store.ts";
import { runWrk } from "./wrk.ts";

const LOGS_PATH = "/api/v1/logs";
/** Address numbers available to X-Forwarded-For (10.x.y.z). */
const ADDRESS_SPACE = 2 ** 24;

const log = (line: string) => console.error(line);

/** The two servers under load, and the service's environment. */
export interface Servers {
  service: ServerProcess;
  bare: ServerProcess;
  serviceEnv: Record<string, string>;
}

/** What the turns need beside the servers. */
export interface TurnsContext {
  options: BenchOptions;
  kvPath: string;
  projectId: string;
  /** The body every request posts. */
  body: string;
  signal: AbortSignal;
}

/**
 * Runs every turn; after each service turn, waits until the service has
 * stored what it accepted.
 */
export async function runTurns(
  context: TurnsContext,
  { service, bare }: Servers,
): Promise<TurnResult[]> {
  const { options } = context;
  const serviceTurns = options.connections.length * options.turns;
  const slice = Math.floor(ADDRESS_SPACE / serviceTurns);
  let serviceTurn = 0;
  const turns: TurnResult[] = [];
  let accepted = 0;
  // Turn-major order (64, 256, 64, 256, ...): the database grows and the
  // machine's other load drifts during the run, and this order spreads both
  // over every connection count instead of giving the later ones all of it.
  for (let turn = 1; turn <= options.turns; turn++) {
    for (const connections of options.connections) {
      for (const which of ["service", "bare"] as const) {
        const server = which === "service" ? service : bare;
        const offset = which === "service" ? serviceTurn++ * slice : 0;
        log(
          `Turn ${turn}/${options.turns}: ${which}, ${connections} connections, ${options.duration} s`,
        );
        const { result, command } = await runWrk({
          url: `${server.url}${LOGS_PATH}`,
          connections,
          threads: options.threads,
          durationSeconds: options.duration,
          body: context.body,
          addressOffset: offset,
          signal: context.signal,
        });
        const loadEnded = performance.now();
        const record: TurnResult = {
          server: which,
          connections,
          turn,
          wrk: result,
          command,
        };
        log(
          `  ${formatCount(result.requestsPerSec)} req/s, p50 ${
            formatMs(result.latencyMs.p50)
          } ms, p99 ${
            formatMs(result.latencyMs.p99)
          } ms, non-2xx ${result.non2xx}`,
        );
        if (which === "service") {
          if (result.requests > slice) {
            log(
              `  ${result.requests} requests exceed the ${slice} distinct X-Forwarded-For addresses of a turn: addresses repeated`,
            );
          }
          accepted = await drainAfter(context, record, loadEnded, accepted);
        }
        turns.push(record);
      }
    }
  }
  return turns;
}

/**
 * Waits until the service has stored what it accepted in the turn of
 * `record`, and notes the drain in it; returns the accepted count now.
 * Waiting here keeps the consumer's work out of the bare turn that follows.
 */
async function drainAfter(
  context: TurnsContext,
  record: TurnResult,
  loadEnded: number,
  acceptedBefore: number,
): Promise<number> {
  const drain = await waitForDrain({
    kvPath: context.kvPath,
    projectId: context.projectId,
    loadEnded,
    timeoutMs: context.options.drainTimeout * 1000,
  });
  record.drainMs = drain.drainMs;
  record.drained = drain.drained;
  record.pendingAtFirstPoll = drain.pendingAtFirstPoll;
  record.storedDelta = drain.accepted - acceptedBefore;
  log(
    `  drain ${formatCount(drain.drainMs)} ms${
      drain.drained ? "" : " (timed out)"
    }, ${drain.pendingAtFirstPoll} batches pending at the first poll, ${
      formatCount(record.storedDelta)
    } stored in this turn`,
  );
  return drain.accepted;
}
