/**
 * A query thread's stand-in (db/query/thread_main.ts speaks the same
 * messages) whose `queryLogs` holds its loop for good, as a read caught in a
 * loop would, and whose `facets` takes 2 s while answering pings.
 *
 * @module
 */
import type { FromQueryThread, ToQueryThread } from "../../db/query/thread.ts";
import type { ThreadNotice } from "../../db/own_thread.ts";

const scope = self as unknown as {
  postMessage(message: FromQueryThread | ThreadNotice): void;
  onmessage: ((event: MessageEvent<ToQueryThread>) => void) | null;
};

scope.onmessage = async ({ data: message }) => {
  if (message.type === "ping" || message.type === "start") {
    scope.postMessage({ type: "pong" });
  } else if (message.type === "stop") scope.postMessage({ type: "stopped" });
  else if (message.type === "read" && message.read === "queryLogs") {
    for (;;) { /* held */ }
  } else if (message.type === "read") {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    scope.postMessage({ type: "read", id: message.id, result: "slow" });
  }
};
