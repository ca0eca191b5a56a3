/**
 * The query thread (db/query/thread.ts): a Worker that opens the database
 * file itself and runs the reads asked of it there, several at once, each
 * giving the others a turn as it does in the server's thread.
 *
 * @module
 */
import { openKv } from "../open.ts";
import { errorLine, lockedAsLine } from "../locked.ts";
import { localReads, type Reads } from "./reads.ts";
import type { FromQueryThread, ToQueryThread } from "./thread.ts";
import type { ThreadNotice } from "../own_thread.ts";

/** The worker's global scope, as far as this module speaks to it. */
const scope = self as unknown as {
  postMessage(message: FromQueryThread | ThreadNotice): void;
  onmessage: ((event: MessageEvent<ToQueryThread>) => void) | null;
};

function post(message: FromQueryThread | ThreadNotice): void {
  scope.postMessage(message);
}

let kvPath: string | undefined;
let opened: Promise<{ kv: Deno.Kv; reads: Reads }> | undefined;
/** The reads under way. */
const inFlight = new Set<Promise<void>>();

async function open(kvPath: string) {
  const kv = await openKv(kvPath);
  return { kv, reads: localReads(kv) };
}

/** The options as sent, with a deadline in this thread's clock again. */
function ownOptions(options: Record<string, unknown>): Record<string, unknown> {
  const { deadlineInMs, ...rest } = options;
  return deadlineInMs === undefined
    ? rest
    : { ...rest, deadline: performance.now() + (deadlineInMs as number) };
}

async function read(message: Extract<ToQueryThread, { type: "read" }>) {
  const { reads } = await opened!;
  const run = reads[message.read] as (...args: unknown[]) => Promise<unknown>;
  const options = ownOptions(message.args.at(-1) as Record<string, unknown>);
  try {
    const result = await run(...message.args.slice(0, -1), options);
    post({ type: "read", id: message.id, result });
  } catch (error) {
    const { name, message: text } = error instanceof Error
      ? error
      : new Error(String(error));
    post({ type: "read", id: message.id, error: { name, message: text } });
  }
}

scope.onmessage = async (event) => {
  const message = event.data;
  try {
    if (message.type === "start") {
      // Opened at the first read: a thread nothing reads with costs nothing
      // at rest (a KV handle has timers of its own).
      kvPath = message.kvPath;
      // Heard before any read: the server counts silence from here.
      post({ type: "pong" });
    } else if (message.type === "ping") {
      // Answered whenever this thread's loop is free: a sign of life.
      post({ type: "pong" });
    } else if (message.type === "read") {
      opened ??= open(kvPath!);
      const reading = read(message);
      inFlight.add(reading);
      await reading.finally(() => inFlight.delete(reading));
    } else if (message.type === "stop") {
      const started = await opened?.catch(() => undefined);
      // The reads under way finish (each within its budget) before the
      // handle they read with closes.
      await Promise.allSettled(inFlight);
      started?.kv.close();
      post({ type: "stopped" });
    }
  } catch (error) {
    post({ type: "failed", error: errorLine(lockedAsLine(error)) });
  }
};
