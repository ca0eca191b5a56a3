/**
 * What the pipeline logs of a failure: one line, its message and its causes'
 * messages, never a stack, and the batch named once.
 *
 * @module
 */
import assert from "node:assert/strict";
import { errorLine } from "../../db/locked.ts";
import { createPipeline } from "../../queue/pipeline.ts";
import { testConfig } from "../_helpers/harness.ts";

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

Deno.test("a merger thread that cannot open its database is logged as one line saying so once", async () => {
  const dir = await Deno.makeTempDir();
  const kv = await Deno.openKv(":memory:");
  const lines: string[] = [];
  const error = console.error;
  let logged: () => void;
  const once = new Promise<void>((resolve) => logged = resolve);
  console.error = (...parts: unknown[]) => {
    lines.push(parts.join(" "));
    logged();
  };
  try {
    // A folder is no database file.
    const pipeline = createPipeline({
      kv,
      config: testConfig(),
      mergeThread: dir,
    });
    pipeline.merger!.start();
    await once;
    await pipeline.merger!.stop();
  } finally {
    console.error = error;
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /^Cannot merge: /);
  assert.doesNotMatch(lines[0]!, /Cannot merge: Cannot merge/);
  assert.ok(!lines[0]!.includes("\n"));
});
