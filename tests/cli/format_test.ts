/**
 * The CLI's formatting (cli/format.ts): durations and times as operators
 * write them, and tables aligned on visible width.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  formatLevel,
  formatTable,
  parseDuration,
  parseTimeFlag,
} from "../../cli/format.ts";

Deno.test("durations and times read as operators write them", () => {
  assert.equal(parseDuration("15m"), 900_000);
  assert.equal(parseDuration("1h30m"), 5_400_000);
  assert.equal(parseDuration("24h"), 86_400_000);
  assert.equal(parseDuration("0"), 0);
  assert.equal(parseDuration("soon"), undefined);
  const now = () => Date.UTC(2026, 0, 1, 12);
  assert.equal(parseTimeFlag("--since", "2h", now), Date.UTC(2026, 0, 1, 10));
  assert.equal(
    parseTimeFlag("--since", "2026-01-01T11:00:00Z", now),
    Date.UTC(2026, 0, 1, 11),
  );
  assert.equal(
    parseTimeFlag("--since", "2026-01-01", now),
    Date.UTC(2026, 0, 1),
  );
  assert.throws(
    () => parseTimeFlag("--since", "Tuesday", now),
    /Cannot read --since "Tuesday"/,
  );
});

Deno.test("tables align columns on visible width, colours not counted", () => {
  assert.equal(
    formatTable([["ID", "LEVEL", "X"], ["a", "\x1b[31merror\x1b[0m", "y"]]),
    "ID  LEVEL  X\na   \x1b[31merror\x1b[0m  y",
  );
});

Deno.test("a custom level is magenta, whatever its name, and a known one keeps its colour", () => {
  assert.equal(formatLevel("error", true), "\x1b[31merror\x1b[0m");
  for (const level of ["audit", "constructor", "toString", "__proto__"]) {
    assert.equal(formatLevel(level, true), `\x1b[35m${level}\x1b[0m`);
  }
});
