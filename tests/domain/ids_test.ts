/**
 * Ids (domain/ids.ts): their time is read back, a time becomes the smallest
 * bound and the smallest whole id of its millisecond, and only the form of
 * an id passes its check.
 */
import assert from "node:assert/strict";
import {
  boundTime,
  createId,
  firstIdAt,
  idTime,
  isIdForm,
  timeBound,
} from "../../domain/ids.ts";

const T = Date.UTC(2026, 0, 1, 10, 30);

Deno.test("an id made at a time sorts at or after that time's bounds and reads back its time", () => {
  const id = createId(T);
  assert.equal(id.length, 28);
  assert.ok(isIdForm(id));
  assert.equal(idTime(id), T);
  assert.ok(timeBound(T) <= id && firstIdAt(T) <= id);
  assert.ok(createId(T - 1) < firstIdAt(T));
  assert.equal(firstIdAt(T), timeBound(T) + "0".repeat(16));
  assert.ok(isIdForm(firstIdAt(T)));
});

Deno.test("boundTime reads the time of an id, of a time bound, and of a shorter bound padded with zeros", () => {
  assert.equal(boundTime(createId(T)), T);
  assert.equal(boundTime(timeBound(T)), T);
  assert.equal(boundTime("019b"), parseInt("019b00000000", 16));
});

Deno.test("only 28 lowercase hex digits have the form of an id", () => {
  for (
    const text of [
      "",
      "0193",
      "0".repeat(27),
      "0".repeat(29),
      "0193A1B2C3D4" + "0".repeat(16),
      "g".repeat(28),
      " " + "0".repeat(27),
    ]
  ) {
    assert.equal(isIdForm(text), false, text);
  }
  assert.ok(isIdForm("0".repeat(28)));
});
