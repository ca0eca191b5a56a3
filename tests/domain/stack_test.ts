/**
 * Stacks read into frames (domain/stack.ts) in the formats of V8, Firefox
 * and Safari, Hermes and Apple crash lines, bounded; and what grouping
 * makes of them (domain/fingerprint.ts): the runtime's frames skipped for
 * the top frame, frames given as an array of strings read, and a sender's
 * own `data.fingerprint`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { fingerprintOf, topFrame } from "../../domain/fingerprint.ts";
import {
  isRuntimeFrame,
  MAX_STACK_FRAMES,
  parseStack,
} from "../../domain/stack.ts";

function where(stack: unknown) {
  return parseStack(stack).map((f) =>
    [f.function, f.file, f.line, f.column].join("|")
  );
}

/** Stacks of each runtime, and their frames as `function|file|line|column`. */
const RUNTIME_STACKS: { runtime: string; stack: unknown; frames: string[] }[] =
  [
    {
      runtime: "V8 (Chrome, Node, Deno)",
      stack:
        "TypeError: x\n    at c (https://shop.example.com/app.min.js:1:44)\n    at async Promise.all (index 0)\n    at https://shop.example.com/app.min.js:2:10\n    at new Cart (file:///srv/cart.js:7:3)",
      frames: [
        "c|https://shop.example.com/app.min.js|1|44",
        "Promise.all|index 0||",
        "|https://shop.example.com/app.min.js|2|10",
        "new Cart|file:///srv/cart.js|7|3",
      ],
    },
    {
      runtime: "Firefox and Safari",
      stack:
        "c@https://shop.example.com/app.min.js:1:44\n@https://shop.example.com/app.min.js:2:10\nparse@[native code]",
      frames: [
        "c|https://shop.example.com/app.min.js|1|44",
        "|https://shop.example.com/app.min.js|2|10",
        "parse|[native code]||",
      ],
    },
    {
      runtime: "Hermes (React Native)",
      stack:
        "Error: x\n    at pay (address at index.android.bundle:1:9042)\n    at apply (native)\n    at anonymous (http://10.0.2.2:8081/index.bundle?platform=ios:12:30)",
      frames: [
        "pay|index.android.bundle|1|9042",
        "apply|native||",
        "anonymous|http://10.0.2.2:8081/index.bundle?platform=ios|12|30",
      ],
    },
    {
      runtime: "an array of strings, Apple crash lines among them",
      stack: [
        "0   CoreFoundation   0x00000001804f1234 __exceptionPreprocess + 164",
        "1   Shop             0x0000000102a4b2c4 -[CartController pay:] + 120",
        "at checkout (cart.js:3:11)",
      ],
      frames: [
        "__exceptionPreprocess|CoreFoundation||",
        "-[CartController pay:]|Shop||",
        "checkout|cart.js|3|11",
      ],
    },
  ];

Deno.test("stacks of each runtime are read into frames", async (t) => {
  for (const { runtime, stack, frames } of RUNTIME_STACKS) {
    await t.step(runtime, () => assert.deepEqual(where(stack), frames));
  }
});

Deno.test("a stack is read up to its bound of frames", () => {
  const long = Array.from(
    { length: 500 },
    (_, i) => `    at f${i} (a.js:${i + 1}:1)`,
  ).join("\n");
  assert.equal(parseStack(long).length, MAX_STACK_FRAMES);
  assert.equal(parseStack([...long.split("\n")]).length, MAX_STACK_FRAMES);
});

Deno.test("the runtime's own frames are known", () => {
  const runtime = [
    "at JSON.parse (<anonymous>)",
    "at apply (native)",
    "at processTicksAndRejections (node:internal/process/task_queues:95:5)",
    "at runMicrotasks (ext:core/01_core.js:10:3)",
    "parse@[native code]",
    "at x (chrome-extension://abc/content.js:1:2)",
  ];
  for (const line of runtime) {
    assert.ok(isRuntimeFrame(parseStack(line)[0]!), line);
  }
  assert.ok(
    !isRuntimeFrame(parseStack("at pay (https://shop/app.js:1:2)")[0]!),
  );
});

Deno.test("grouping skips the runtime's frames for the top frame", () => {
  const stack =
    "SyntaxError: Unexpected token\n    at JSON.parse (<anonymous>)\n    at loadCart (https://shop.example.com/app.js:10:5)";
  assert.equal(topFrame(stack), "https://shop.example.com/app.js:loadCart");
  assert.equal(
    topFrame(
      "Error: x\n    at emit (node:events:519:28)\n    at onData (file:///srv/app.js:3:1)",
    ),
    "file:///srv/app.js:onData",
  );
  // Only the runtime's frames: the first is kept.
  assert.equal(
    topFrame("Error: x\n    at JSON.parse (<anonymous>)"),
    "<anonymous>:JSON.parse",
  );
});

Deno.test("iOS frames sent as an array of strings give a top frame", () => {
  assert.equal(
    topFrame([
      "0   Shop   0x0000000102a4b2c4 -[CartController pay:] + 120",
      "1   Shop   0x0000000102a4b300 main + 44",
    ]),
    "Shop:-[CartController pay:]",
  );
});

Deno.test("data.fingerprint overrides the computed fingerprint, as in Sentry", async (t) => {
  const a = { title: "Timeout calling payments", stack: "at a (x.js:1:1)" };
  const b = { title: "Timeout calling shipping", stack: "at b (y.js:1:1)" };
  await t.step("the same string groups different errors together", () => {
    const one = fingerprintOf({ data: { ...a, fingerprint: "upstream" } });
    const two = fingerprintOf({ data: { ...b, fingerprint: "upstream" } });
    assert.equal(one.fingerprint, two.fingerprint);
    assert.notEqual(
      one.fingerprint,
      fingerprintOf({ data: a }).fingerprint,
    );
  });
  await t.step("an array, with {{ default }} for the computed one", () => {
    const one = fingerprintOf({
      data: { ...a, fingerprint: ["{{ default }}", "eu"] },
    });
    const two = fingerprintOf({
      data: { ...a, fingerprint: ["{{ default }}", "us"] },
    });
    assert.notEqual(one.fingerprint, two.fingerprint);
    assert.equal(
      one.fingerprint,
      fingerprintOf({ data: { ...a, fingerprint: ["{{default}}", "eu"] } })
        .fingerprint,
    );
  });
  await t.step("anything else is ignored", () => {
    for (const fingerprint of [42, [], [1, 2], "", { a: 1 }]) {
      assert.equal(
        fingerprintOf({ data: { ...a, fingerprint } }).fingerprint,
        fingerprintOf({ data: a }).fingerprint,
      );
    }
  });
});
