/**
 * How an entry reads in the explorer: a stack as lines (top frames first,
 * long stacks folded) and a one-line preview for entries without a title.
 *
 * @module
 */
import assert from "node:assert/strict";
import { orderedStack, STACK_SHOWN } from "../../dashboard/pages/stack.tsx";
import { summary } from "../../dashboard/pages/format.ts";
import { ENTRY_PREVIEW_BYTES } from "../../dashboard/pages/entry.tsx";
import { signedInTest, store, textOf } from "../_helpers/dashboard.ts";
import type { LogRecord } from "../../domain/entry.ts";

/** `count` lines of a JavaScript stack, `f0` first. */
function stackLines(count: number): string[] {
  return Array.from(
    { length: count },
    (_, i) => `    at f${i} (https://shop.example.com/app.js:${i}:1)`,
  );
}

function record(data: Record<string, unknown>): LogRecord {
  return {
    id: "0".repeat(28),
    receivedAt: 0,
    level: "error",
    data,
    device: {},
    context: {},
    auth: "signature",
  };
}

Deno.test("an entry without a title previews its message, else its first string field", () => {
  assert.equal(summary(record({ title: "T", message: "M" })), "T — M");
  assert.equal(
    summary(record({ message: "Only a message", n: 1 })),
    "Only a message",
  );
  assert.equal(summary(record({ n: 1, path: "/cart", code: "E1" })), "/cart");
  assert.equal(summary(record({ n: 1, ok: true })), '{"n":1,"ok":true}');
});

Deno.test("a Python traceback is turned around so that the top frame comes first", () => {
  const lines = orderedStack(
    'Traceback (most recent call last):\n  File "main.py", line 3, in <module>\n  File "pay.py", line 9, in charge\nValueError: bad card',
  );
  assert.deepEqual(lines, [
    "ValueError: bad card",
    '  File "pay.py", line 9, in charge',
    '  File "main.py", line 3, in <module>',
  ]);
});

signedInTest(
  "the explorer shows a stack string or frame array as lines in a pre, the rest of a long one folded",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    const frames = stackLines(12);
    const [long, array] = await store(h, project.id, [
      {
        level: "error",
        data: {
          message: "TypeError: <x> is undefined",
          stack: ["TypeError: <x> is undefined", ...frames].join("\n"),
        },
      },
      {
        level: "error",
        data: {
          message: "Frames",
          stack: [{ function: "pay", file: "pay.py", line: 9 }, "main@m.js:1"],
        },
      },
    ]);
    const html =
      await (await browser.get(`/projects/${project.id}?open=${long!.id}`))
        .text();
    const top = /<pre class="stack-top">([^<]*)<\/pre>/.exec(
      html.slice(html.indexOf(`id="e-${long!.id}"`)),
    );
    assert.ok(top, "the stack is in a <pre>");
    const lines = textOf(top[1]!).length > 0 ? top[1]!.split("\n") : [];
    assert.equal(lines.length, STACK_SHOWN);
    assert.equal(lines[0], "TypeError: &lt;x&gt; is undefined");
    assert.match(lines[1]!, /at f0 /);
    assert.match(html, /<summary>5 more lines<\/summary><pre> {4}at f7 /);
    const arrayHtml = html.slice(html.indexOf(`id="e-${array!.id}"`));
    assert.match(
      arrayHtml,
      /<pre class="stack-top">at pay \(pay\.py:9\)\nmain@m\.js:1<\/pre>/,
    );
    // The list's preview of an entry without a title is its message.
    assert.match(
      textOf(html),
      /error https:\/\/app\.example\.com origin Frames/,
    );
  },
);

signedInTest(
  "a stack longer than a preview allows is cut in the list, saying so, and whole in the full entry",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    const frames = stackLines(600);
    const [record] = await store(h, project.id, [
      { level: "error", data: { message: "Deep", stack: frames.join("\n") } },
    ]);
    const row = (html: string) =>
      html.slice(html.indexOf(`id="e-${record!.id}"`));
    const list = row(
      await (await browser.get(`/projects/${project.id}`)).text(),
    );
    assert.ok(list.includes("at f0 "), "the top of the stack is shown");
    assert.ok(!list.includes("at f599 "), "not all of it");
    assert.ok(
      list.length < ENTRY_PREVIEW_BYTES * 3,
      `the row is ${list.length} characters`,
    );
    assert.match(textOf(list), /the stack cut short\. Show the full entry/);
    const full = await (await browser.get(
      `/projects/${project.id}/entries/${record!.id}`,
    )).text();
    assert.match(full, /<summary>592 more lines<\/summary>/);
    assert.ok(full.includes("at f599 "), "the full entry has all of it");
  },
);

Deno.test("the histogram's y-axis tops at a round number over the peak, with its half, and its times are labelled UTC", async () => {
  const { niceMax, HistogramChart } = await import(
    "../../dashboard/pages/histogram.tsx"
  );
  assert.deepEqual([0, 1, 3, 10, 11, 37, 180, 501].map(niceMax), [
    1,
    1,
    5,
    10,
    20,
    50,
    200,
    1000,
  ]);
  const start = Date.UTC(2026, 0, 15, 9);
  const html = await HistogramChart({
    histogram: {
      intervalMs: 60_000,
      countedFrom: null,
      buckets: [
        { start, counts: { info: 30, error: 7 } },
        { start: start + 60_000, counts: {} },
      ],
    },
    zoom: () => "#",
  })!.toString();
  assert.match(html, /data-tick="max">50</);
  assert.match(html, /data-tick="half">25</);
  assert.match(
    html,
    /data-start="1768467600000" data-counts="\{&quot;info&quot;:30,&quot;error&quot;:7\}"/,
  );
  assert.match(
    textOf(html),
    /2026-01-15 09:00:00 UTC 37 entries · 1 min per bar · peak 37 2026-01-15 09:02:00 UTC/,
  );
});
