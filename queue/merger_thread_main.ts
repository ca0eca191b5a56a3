/**
 * The merger's own thread (queue/merger_thread.ts): a Worker that opens the
 * database file itself and runs {@linkcode createMerger}'s rounds there, so
 * that a merge's indexing and deflate never hold the thread that answers
 * requests.
 *
 * @module
 */
import { openKv } from "../db/open.ts";
import { errorLine, lockedAsLine } from "../db/locked.ts";
import { createMerger, type Merger } from "./merger.ts";
import type { FromMergeThread, ToMergeThread } from "./merger_thread.ts";
import type { ThreadNotice } from "../db/own_thread.ts";

/** The worker's global scope, as far as this module speaks to it. */
const scope = self as unknown as {
  postMessage(message: FromMergeThread | ThreadNotice): void;
  onmessage: ((event: MessageEvent<ToMergeThread>) => void) | null;
};

function post(message: FromMergeThread | ThreadNotice): void {
  scope.postMessage(message);
}

let merger: Promise<{ merger: Merger; kv: Deno.Kv }> | undefined;

async function startMerger(kvPath: string, intervalMs: number) {
  const kv = await openKv(kvPath);
  const merger = createMerger({
    kv,
    intervalMs,
    onBacklog: (backlog) => post({ type: "backlog", backlog }),
  });
  merger.start();
  return { merger, kv };
}

scope.onmessage = async (event) => {
  const message = event.data;
  try {
    if (message.type === "start") {
      merger = startMerger(message.kvPath, message.intervalMs);
      await merger;
    } else if (message.type === "round") {
      const { merger: m } = await merger!;
      const result = await m.round(
        message.maxMerges === undefined ? {} : { maxMerges: message.maxMerges },
      ).catch((error) => ({ error: errorLine(lockedAsLine(error)) }));
      post(
        "error" in result
          ? { type: "round", id: message.id, error: result.error }
          : { type: "round", id: message.id, result },
      );
    } else if (message.type === "stop") {
      const started = await merger?.catch(() => undefined);
      await started?.merger.stop();
      started?.kv.close();
      post({ type: "stopped" });
    }
  } catch (error) {
    post({ type: "failed", error: errorLine(lockedAsLine(error)) });
  }
};
