/**
 * The client's release options and its opt-in capture of `console.error`
 * and `console.warn`: what is sent, that the console still prints, that
 * nothing is captured unless asked, that stopping restores the console, and
 * that what the logger's own callbacks print (`onError`, `beforeSend`) is not
 * reported again.
 *
 * @module
 */
import assert from "node:assert/strict";
import { refused } from "../_helpers/client_fakes.ts";
import { fakeLogger as setup } from "../_helpers/client_logger.ts";

Deno.test("release and dist are sent in every entry's context, over the logger's context", async () => {
  const { time, net, logger } = setup({
    context: { service: "shop", release: "old" },
    release: "1.4.0",
    dist: "ios-57",
  });
  logger.error("Boom");
  await time.advance(0);
  assert.deepEqual(JSON.parse(net.calls[0]!.body).context, {
    service: "shop",
    release: "1.4.0",
    dist: "ios-57",
  });
});

Deno.test("captureConsole reports console.error and console.warn, which still print; stopping restores them", async () => {
  const { time, net, logger } = setup();
  const printed: unknown[][] = [];
  const original = { error: console.error, warn: console.warn };
  console.error = (...args: unknown[]) => printed.push(["error", ...args]);
  console.warn = (...args: unknown[]) => printed.push(["warn", ...args]);
  try {
    console.error("not captured yet");
    const stop = logger.captureConsole();
    const error = new TypeError("cart is undefined");
    console.error("Checkout failed:", error, { order: 7 });
    console.warn("Slow", 1200);
    stop();
    console.error("after stop");
    await time.advance(0);
    const bodies = net.calls.map((c) => JSON.parse(c.body));
    assert.deepEqual(
      bodies.map((b) => [b.level, b.data.title, b.data.event]),
      [
        [
          "error",
          'Checkout failed: cart is undefined {"order":7}',
          "console.error",
        ],
        ["warning", "Slow 1200", "console.warn"],
      ],
    );
    assert.match(bodies[0].data.stack, /^TypeError: cart is undefined/);
    assert.equal(printed.length, 4, "the console printed every call");
  } finally {
    console.error = original.error;
    console.warn = original.warn;
  }
  await logger.close();
});

Deno.test("what onError prints with console.error is not reported: an entry refused is one request, not a loop", async () => {
  const printed: unknown[][] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => printed.push(args);
  // The docs' server snippet: onError prints what was refused. Every
  // request is refused (400, as for a project id of 129 characters).
  const { time, net, logger, titles } = setup({
    projectId: "p".repeat(129),
    onError: (error) =>
      console.error("Entry refused:", error.code, error.message),
  }, () => refused(400, "invalid_body"));
  const stop = logger.captureConsole();
  try {
    console.error("Checkout failed");
    // Before, each print of onError was a new entry, refused in turn: 1,245
    // requests in these 60 s.
    await time.advance(60_000);
  } finally {
    stop();
    console.error = original;
  }
  // The entry's one attempt (a 400 is not retried), and no other entry.
  assert.equal(net.calls.length, 1);
  assert.deepEqual(titles(), ["Checkout failed"]);
  assert.equal(logger.stats().failed, 1);
  assert.deepEqual(printed.map((args) => args.slice(0, 2)), [
    ["Checkout failed"],
    ["Entry refused:", "invalid_body"],
  ], "the console still printed both");
  await logger.close();
});

Deno.test("what beforeSend prints is not reported either", async () => {
  const original = console.warn;
  console.warn = () => {};
  const { time, logger, titles } = setup({
    beforeSend(entry) {
      console.warn("Scrubbing", entry.data.title);
      return entry;
    },
  });
  const stop = logger.captureConsole();
  try {
    logger.info("Login");
    console.warn("Slow");
  } finally {
    stop();
    console.warn = original;
  }
  await time.advance(0);
  assert.deepEqual(titles(), ["Login", "Slow"]);
  await logger.close();
});
