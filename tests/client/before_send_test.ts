/**
 * The client's `beforeSend` hook: scrubbing at the source, dropping an
 * entry with `null`, and a hook that throws, which drops the entry, tells
 * `onError` and leaves the logger working. A signed entry is signed after
 * the hook, over what is sent.
 *
 * @module
 */
import assert from "node:assert/strict";
import { fakeLogger as setup } from "../_helpers/client_logger.ts";
import { sign } from "../../client/mod.ts";
import { until } from "../_helpers/client_fakes.ts";

Deno.test("beforeSend changes what is sent, and null drops the entry", async () => {
  const { time, net, logger, errors } = setup({
    beforeSend(entry) {
      if (entry.data.title === "Drop") return null;
      const { password: _, ...data } = entry.data;
      return { ...entry, data: { ...data, scrubbed: true } };
    },
  });
  logger.info("Login", undefined, { password: "hunter2", user: "ana" });
  logger.info("Drop");
  logger.info("Kept");
  await time.advance(0);
  const bodies = net.calls.map((call) => JSON.parse(call.body));
  assert.deepEqual(bodies.map((b) => b.data), [
    { title: "Login", user: "ana", scrubbed: true },
    { title: "Kept", scrubbed: true },
  ]);
  assert.ok(!net.calls[0]!.body.includes("hunter2"));
  assert.equal(errors.length, 0);
});

Deno.test("a beforeSend that throws drops that entry, tells onError, and logging goes on", async () => {
  let calls = 0;
  const { time, net, logger, errors } = setup({
    beforeSend(entry) {
      if (++calls === 1) throw new Error("boom");
      if (calls === 2) return "nonsense" as unknown as typeof entry;
      return entry;
    },
  });
  logger.info("First", undefined, { password: "hunter2" });
  logger.info("Second");
  logger.info("Third");
  await time.advance(0);
  assert.deepEqual(
    net.calls.map((call) => JSON.parse(call.body).data.title),
    ["Third"],
  );
  assert.deepEqual(errors.map((e) => e.code), [
    "before_send_failed",
    "before_send_failed",
  ]);
  assert.match(errors[0]!.message, /beforeSend failed: boom/);
});

Deno.test("a beforeSend that returns a frozen entry has it sent, for the logger's own project", async () => {
  const { time, net, logger, errors } = setup({
    beforeSend: (entry) => Object.freeze({ ...entry, projectId: "other" }),
  });
  logger.info("Frozen");
  await time.advance(0);
  const [body] = net.calls.map((call) => JSON.parse(call.body));
  assert.equal(body.data.title, "Frozen");
  assert.notEqual(body.projectId, "other");
  assert.equal(errors.length, 0);
});

Deno.test("a signed entry is signed over what beforeSend returned, for its own project", async () => {
  const { time, net, logger } = setup({
    secret: "s3cret",
    beforeSend: (entry) => ({
      ...entry,
      projectId: "other",
      data: { title: "Clean" },
    }),
  });
  logger.info("Dirty", "token=abc");
  await time.advance(0);
  await until(() => net.calls.length === 1); // signing is asynchronous
  const call = net.calls[0]!;
  assert.equal(
    call.body,
    '{"level":"info","projectId":"p1","data":{"title":"Clean"}}',
  );
  const timestamp = call.headers.get("timestamp")!;
  assert.equal(
    call.headers.get("signature"),
    await sign("s3cret", `p1${call.body}${timestamp}`),
  );
});
