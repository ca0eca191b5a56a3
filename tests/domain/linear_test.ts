/**
 * What a sender's text costs grows with its length, not with its square:
 * the body's scan (a long number), scrubbing's key words (a long run of
 * capitals) and a stack's lines (long runs of spaces) each read a 60 KB
 * input in about a millisecond. Each bound below is hundreds of times what
 * the input takes now; the patterns these replaced took seconds.
 *
 * @module
 */
import assert from "node:assert/strict";
import { scanJson } from "../../domain/json.ts";
import { keyWords } from "../../domain/scrub.ts";
import { lineCall, parseStack } from "../../domain/stack.ts";

/** Far above the milliseconds each input takes, far below the seconds it took. */
const BOUND_MS = 500;

/** Runs `fn` and checks it took under {@linkcode BOUND_MS}. */
function withinBound<T>(what: string, fn: () => T): T {
  const start = performance.now();
  const result = fn();
  const ms = performance.now() - start;
  assert.ok(ms < BOUND_MS, `${what} took ${ms.toFixed(0)} ms`);
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
