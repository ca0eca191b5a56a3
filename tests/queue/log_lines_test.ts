/**
 * What the pipeline logs of a failure: one line, its message and its causes'
 * messages, never a stack, and the batch named once.
 *
 * @module
 */
import assert from "node:assert/strict";
import { errorLine } from "../../db/locked.ts";

Deno.test("a failure is logged as one line of its messages, causes included, without a stack", () => {
  const error = new Error(
    'Cannot process batch "b1": its projects kept changing',
    {
      cause: new TypeError("database is locked\n  at commit"),
    },
  );
  const line = errorLine(error);
  assert.equal(
    line,
    'Cannot process batch "b1": its projects kept changing: database is locked at commit',
  );
  assert.ok(!line.includes("\n"));
  assert.ok(!line.includes("at Consumer"), "no stack frame");
});

Deno.test("a cause that repeats its holder's message is said once", () => {
  const inner = new Error("Cannot merge: locked");
  assert.equal(
    errorLine(new Error("locked", { cause: inner })),
    "locked: Cannot merge: locked",
  );
  assert.equal(
    errorLine(
      new Error("Cannot merge: locked", { cause: new Error("locked") }),
    ),
    "Cannot merge: locked",
  );
  assert.equal(errorLine("plain text"), "plain text");
});
