/**
 * A logger on a fake clock and a fake `fetch` for the client library's unit
 * tests, with no jitter unless asked.
 *
 * @module
 */
import {
  createLogger,
  type DeliveryError,
  type LoggerOptions,
} from "../../client/mod.ts";
import { type Answer, type Call, fakeFetch, fakeTime } from "./client_fakes.ts";

/** The endpoint the fake loggers send to. */
export const ENDPOINT = "https://logs.example.com/api/v1/logs";

/**
 * Builds a logger whose clock, timers and `fetch` are fakes; `answer` decides
 * each response (`200 queued` by default).
 *
 * @example
 * ```ts
 * const { time, logger, times } = fakeLogger({ rate: 5 });
 * logger.info("x");
 * await time.advance(1000);
 * ```
 */
export function fakeLogger(
  options: Partial<LoggerOptions> = {},
  answer?: (call: Call, index: number) => Answer,
) {
  const time = fakeTime();
  const net = fakeFetch(time.now, answer);
  const errors: DeliveryError[] = [];
  const logger = createLogger({
    endpoint: ENDPOINT,
    projectId: "p1",
    fetch: net.fetch,
    now: time.now,
    setTimeout: time.setTimeout,
    clearTimeout: time.clearTimeout,
    random: () => 0,
    onError: (error) => errors.push(error),
    // Delivery is tested on the bodies as given; tests/client/context_test.ts
    // tests what the logger adds.
    deviceContext: false,
    ...options,
  });
  const start = time.now();
  /** Times of the requests, in ms from the start. */
  const times = () => net.calls.map((call) => call.at - start);
  const titles = () =>
    net.calls.map((call) => JSON.parse(call.body).data.title);
  return { time, net, errors, logger, times, titles };
}
