/**
 * What a sender's text costs grows with its length, not with its square:
 * the body's scan (a long number), scrubbing's key words (a long run of
 * capitals) and its trigger (a rule on `t_id` over a run of `\t`), and a
 * stack's lines (long runs of spaces) each read a 60 KB input in about a
 * millisecond. Each bound below is hundreds of times what
 * the input takes now; the patterns these replaced took seconds.
 *
 * @module
 */
import assert from "node:assert/strict";
import { scanJson } from "../../domain/json.ts";
import { compileScrubber, keyWords } from "../../domain/scrub.ts";
import { lineCall, parseStack } from "../../domain/stack.ts";
import { parseSourceMap, resolveFrames } from "../../domain/symbolicate.ts";
import { mapMatches } from "../../db/sourcemaps.ts";
import { errorLine } from "../../db/locked.ts";
import { describeError } from "../../routes/error_log.ts";

/** Far above the milliseconds each input takes, far below the seconds it took. */
const BOUND_MS = 500;

/** Runs `fn` and checks it took under `bound` ms. */
function withinBound<T>(what: string, fn: () => T, bound = BOUND_MS): T {
  const start = performance.now();
  const result = fn();
  const ms = performance.now() - start;
  assert.ok(ms < bound, `${what} took ${ms.toFixed(0)} ms`);
  return result;
}

Deno.test("a number of 60,000 zeros and a digit is refused at once (it took 2.3 s)", () => {
  const body = `{"data":{"n":1.${"0".repeat(60_000)}1}}`;
  const { inexact } = withinBound(
    "the scan",
    () => scanJson(body, 32, false, new Set(["data"])),
  );
  assert.equal(inexact?.[0]?.path, "data.n");
  assert.match(inexact![0]!.message, /cannot hold exactly/);
});

Deno.test("a key of 60,000 capitals is split into words at once (it took 2.4 s), into the same words as before", () => {
  const words = withinBound("keyWords", () => keyWords("A".repeat(60_000)));
  assert.deepEqual(words, ["a".repeat(60_000)]);
  const cases: [string, string[]][] = [
    ["HTTPServer", ["http", "server"]],
    ["XApiKey", ["x", "api", "key"]],
    ["SessionID", ["session", "id"]],
    ["getHTTPResponseCode", ["get", "http", "response", "code"]],
    ["AAbBBc", ["a", "ab", "b", "bc"]],
    ["X-API-KEY", ["x", "api", "key"]],
  ];
  for (const [key, expected] of cases) {
    assert.deepEqual(keyWords(key), expected, key);
  }
});

Deno.test("a stack line of two long runs of spaces is read at once (one of 6 KB took 11 s), and Apple lines as before", () => {
  const line = `1 a 0x1${" ".repeat(30_000)}x${" ".repeat(30_000)}y`;
  const frames = withinBound("parseStack", () => parseStack(line));
  assert.deepEqual(frames, [], "a symbol past 500 characters is no frame");
  const cases: [string, [string, string] | null][] = [
    ["0   Shop   0x0000000102a4b300 main + 44", ["main", "Shop"]],
    ["1 App 0x1 foo + bar + 12", ["foo + bar", "App"]],
    ["2 App 0x1  + 12", ["+ 12", "App"]],
    ["3 App 0x1 -[Cart pay:]   +   7   ", ["-[Cart pay:]", "App"]],
    ["4 App 0x1 sym + 1234567890123", ["sym + 1234567890123", "App"]],
    [`5 App 0x1 ${"s".repeat(500)} + 1`, ["s".repeat(500), "App"]],
    [`6 App 0x1 ${"s".repeat(501)}`, null],
    ["7 bin 0x1   ", [" ", "bin"]],
    ["8 bin 0x1 ", null],
    ["9 bin 0xfffffffffffffffff main", null],
  ];
  for (const [text, expected] of cases) {
    assert.deepEqual(lineCall(text), expected, text);
  }
});

Deno.test("a key rule whose word stands in every escape of a 60 KB run passes over it at once (it took 5.4 s), and still finds its key past any run", () => {
  const scrubber = compileScrubber([
    { id: "key:t_id", kind: "key", key: "t_id", action: "remove" },
    { id: "key:e_mail", kind: "key", key: "e-mail", action: "remove" },
  ]);
  for (const run of ["\\t", "\\u001e"]) {
    const text = `{"data":{"s":"${run.repeat(60_000 / run.length)}"}}`;
    assert.ok(withinBound("the trigger", () => scrubber.candidate(text)));
  }
  assert.equal(scrubber.candidate('{"data":{"s":"\\t\\t x"}}'), false);
  const cards = compileScrubber([
    { id: "key:cc", kind: "key", key: "cc_number", action: "remove" },
  ]);
  assert.equal(
    cards.candidate('{"data":{"m":"Пользователь вошёл в систему"}}'),
    false,
    "a run of letters outside a-z after no word of the rule is passed over",
  );
  const key = `t${"_".repeat(40)}id`;
  assert.ok(scrubber.candidate(`{"data":{"${key}":1}}`), "40 separators");
  const { entry } = scrubber.scrub({ data: { [key]: "secret", n: 1 } });
  assert.deepEqual(entry.data, { [key]: "[Filtered]", n: 1 });
});

/** A map whose source is 60 copies of `line`, then two generators. */
function mapOfLines(line: string) {
  const lines = Array.from({ length: 60 }, () => line);
  lines.push(
    "function* gen() {",
    "  yield 1;",
    "function *other (a) {",
    "  a;",
  );
  return parseSourceMap(JSON.stringify({
    version: 3,
    sources: ["src/a.js"],
    sourcesContent: [lines.join("\n")],
    names: [],
    mappings: "AAAA" + ";AACA".repeat(lines.length - 1),
  }));
}

/** The least of three timings of `fn`, in ms. */
function leastMs(fn: () => unknown): number {
  let least = Infinity;
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    fn();
    least = Math.min(least, performance.now() - start);
  }
  return least;
}

Deno.test("a map's source of lines of 500 spaces names functions as fast as lines of letters (100 frames took 50 times as long), and generators as before", () => {
  const parsed = mapOfLines(`function${" ".repeat(490)}!`);
  const letters = mapOfLines(`functio${"x".repeat(491)}!`);
  const frame = (line: number) =>
    `    at f (https://a.example/app.js:${line}:1)`;
  const stack = Array.from({ length: 100 }, () => frame(60));
  const frames = parseStack(["Error: x", ...stack].join("\n"));
  // Against the same work on letters, so a slow machine slows both alike:
  // about as long now (15 to 25 ms each); 50 to 70 times as long before.
  const spaced = leastMs(() => resolveFrames(frames, () => parsed));
  const plain = leastMs(() => resolveFrames(frames, () => letters));
  assert.ok(
    spaced < 8 * Math.max(plain, 1),
    `${spaced.toFixed(0)} ms against ${plain.toFixed(0)} ms`,
  );
  const shown = resolveFrames(frames, () => parsed);
  assert.equal(shown.length, frames.length);
  assert.ok(shown.every((f) => f.function === "f"), "no name in the source");
  const named = resolveFrames(
    parseStack([frame(62), frame(64)].join("\n")),
    () => parsed,
  );
  assert.deepEqual(named.map((f) => f.function), ["gen", "other"]);
});

Deno.test("a frame URL of 60,000 '?' before a line break is matched against a map at once (it took 3.5 s), and queries are cut as before", () => {
  const url = `${"?".repeat(60_000)}\u2028`;
  assert.equal(
    withinBound("mapMatches", () => mapMatches("app.js", url)),
    false,
  );
  assert.ok(mapMatches("app.min.js", "https://a.example/x/app.min.js?v=3#top"));
  assert.ok(mapMatches("~/x/app.js", "https://a.example/x/app.js#t"));
  assert.ok(!mapMatches("app.js", "https://a.example/app.js?\n#x"));
  assert.ok(
    !mapMatches("app.js", "https://a.example/app.js\n?x"),
    "cut after the break, the break kept, as before",
  );
});

Deno.test("an error whose text holds 60,000 spaces or parentheses is written as one line at once (each took seconds)", () => {
  const spaced = new Error(`${" ".repeat(60_000)}y\n  z`);
  const line = withinBound("errorLine", () => errorLine(spaced));
  assert.equal(line, `${" ".repeat(60_000)}y z`);
  const odd = new Error("x");
  odd.stack = `Error: x\n    at ${"(".repeat(60_000)}`;
  const described = withinBound("describeError", () => describeError(odd));
  assert.ok(described.startsWith("Error: x (at (((("));
  const usual = new Error("y");
  usual.stack = "Error: y\n    at run (file:///app.ts:3:9)";
  assert.equal(describeError(usual), "Error: y (at file:///app.ts:3:9)");
});

Deno.test("an object of 12,000 card numbers as names is scrubbed at once (it took 10 s), each value kept under a numbered name", () => {
  const data: Record<string, number> = {};
  for (let i = 0; i < 12_000; i++) {
    data[luhn(`4${String(i).padStart(14, "0")}`)] = i;
  }
  const { entry } = withinBound(
    "scrub",
    () => compileScrubber([]).scrub({ data }),
    // 12,000 names through the card detector take tens of ms here, about
    // a second on a loaded machine; the old numbering took 10 s.
    5_000,
  );
  const names = Object.keys(entry.data as object);
  assert.equal(names.length, 12_000);
  assert.deepEqual(names.slice(0, 3), [
    "[Filtered]",
    "[Filtered] (2)",
    "[Filtered] (3)",
  ]);
});

/** `digits` with the check digit that makes them pass the Luhn check. */
function luhn(digits: string): string {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return `${digits}${(10 - sum % 10) % 10}`;
}
