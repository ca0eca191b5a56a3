/**
 * The JSON scanner of the endpoint on the texts that trip hand-written
 * scanners: escaped quotes and backslashes in names and values, names that
 * repeat only once their escapes are decoded, and brackets inside strings.
 * Every span is checked against `JSON.parse` of the same text.
 *
 * @module
 */
import assert from "node:assert/strict";
import { minifyJson, scanJson } from "../../domain/json.ts";

/**
 * Scans `text` and checks that the spans name every top-level member, in
 * order, each holding exactly the text `JSON.parse` reads as its value.
 */
function assertSpans(text: string): void {
  const scan = scanJson(text, 32, true);
  assert.equal(scan.duplicate, undefined);
  assert.equal(scan.tooDeepIn, undefined);
  const parsed = JSON.parse(text);
  assert.deepEqual([...scan.spans!.keys()], Object.keys(parsed));
  for (const [name, [start, end]] of scan.spans!) {
    assert.deepEqual(JSON.parse(text.slice(start, end)), parsed[name], name);
  }
}

Deno.test("scanJson reads names and values holding escaped quotes and backslashes", async (t) => {
  const cases: [string, string][] = [
    ["a name with an escaped quote", String.raw`{"a\"b":1,"c":2}`],
    ["a name ending in an escaped quote", String.raw`{"a\"":1,"b":{"c":2}}`],
    ["a name ending in a backslash", String.raw`{"a\\":1,"b":2}`],
    ["a value ending in a backslash", String.raw`{"a":"x\\","b":"y"}`],
    ["a value of backslashes only", String.raw`{"a":"\\\\","b":[1]}`],
    ["a backslash then an escaped quote", String.raw`{"a":"x\\\"y","b":1}`],
    ["a value that looks like members", String.raw`{"a":"\",\"b\":2","c":3}`],
    ["separators in a name", `{"a,b:{[":1,"c":2}`],
    ["whitespace around the members", ` { "a" : "x\\\\" ,\n\t"b" : { } } `],
  ];
  for (const [name, text] of cases) {
    await t.step(name, () => assertSpans(text));
  }
});

Deno.test("scanJson finds a repeated name however it is spelled", async (t) => {
  const cases: [string, string, string][] = [
    ["plain", `{"a":1,"a":2}`, "a"],
    ["with a \\u escape", String.raw`{"a":1,"\u0061":2}`, "a"],
    ["an escaped quote", String.raw`{"a\"":1,"a\u0022":2}`, 'a"'],
    ["an escaped backslash", String.raw`{"a\\":1,"a\u005c":2}`, "a\\"],
    ["an escaped slash", String.raw`{"a/":1,"a\/":2}`, "a/"],
  ];
  for (const [name, text, duplicate] of cases) {
    await t.step(name, () => {
      assert.equal(scanJson(text, 32).duplicate, duplicate);
    });
  }
  await t.step("names that differ once decoded are not repeated", () => {
    assertSpans(String.raw`{"a\\":1,"a\\\\":2,"a\"":3,"a":4}`);
  });
  await t.step("the same name in nested objects is not repeated", () => {
    assertSpans(`{"a":{"a":1},"b":[{"a":2}]}`);
  });
  await t.step("among many names, early or late", () => {
    const names = Array.from({ length: 40 }, (_, i) => `"n${i}":${i}`);
    const cases: [number, number][] = [[0, 17], [3, 40], [16, 17], [39, 40]];
    for (const [repeated, at] of cases) {
      const text = `{${names.toSpliced(at, 0, `"n${repeated}":0`).join(",")}}`;
      assert.equal(scanJson(text, 32).duplicate, `n${repeated}`, text);
    }
    assertSpans(`{${names.join(",")}}`);
  });
});

Deno.test("scanJson records spans only when asked", () => {
  const text = `{"a":[1],"b":{"c":2}}`;
  assert.equal(scanJson(text, 32).spans, undefined);
  assert.deepEqual([...scanJson(text, 32, true).spans!], [
    ["a", [5, 8]],
    ["b", [13, 20]],
  ]);
});

Deno.test("scanJson counts depth on brackets outside strings only", async (t) => {
  await t.step("opening brackets inside strings do not count", () => {
    const text = `{"a":"[[[[{{{{","b":{"c":"{"}}`;
    const scan = scanJson(text, 2);
    assert.equal(scan.tooDeepIn, undefined);
    assertSpans(text);
  });
  await t.step("closing brackets inside strings do not count", () => {
    // Were "]]]]" counted, b would look three levels shallower than it is.
    const scan = scanJson(`{"a":"]]]]}}}}","b":[[[1]]]}`, 3);
    assert.equal(scan.tooDeepIn, "b");
  });
  await t.step("an escaped quote does not end the string early", () => {
    const scan = scanJson(String.raw`{"a":"\"[[[[","b":1}`, 2);
    assert.equal(scan.tooDeepIn, undefined);
  });
  await t.step("depth is counted at the limit and one past it", () => {
    assert.equal(scanJson(`{"a":[{"b":[]}]}`, 4).tooDeepIn, undefined);
    assert.equal(scanJson(`{"a":[{"b":[[]]}]}`, 4).tooDeepIn, "a");
  });
});

Deno.test("minifyJson drops whitespace between tokens and keeps strings as written", () => {
  const text = String.raw`{ "a" : "x \" y\\" ,
    "b" : [ 1 , "\u00e9 \\\" z" ] }`;
  const minified = minifyJson(text);
  assert.equal(
    minified,
    String.raw`{"a":"x \" y\\","b":[1,"\u00e9 \\\" z"]}`,
  );
  assert.deepEqual(JSON.parse(minified), JSON.parse(text));
});
