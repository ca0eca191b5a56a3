/**
 * The client's release options and its opt-in capture of `console.error`
 * and `console.warn`: what is sent, that the console still prints, that
 * nothing is captured unless asked, and that stopping restores the console.
 *
 * @module
 */
import assert from "node:assert/strict";
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
