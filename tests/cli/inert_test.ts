/**
 * Text a sender or a project supplied is inert in the operator's terminal:
 * control characters, DEL, bidi and other invisible format characters are
 * printed as visible escapes in every human-readable output, while `--json`
 * stays exact JSON with those characters escaped.
 *
 * @module
 */
import assert from "node:assert/strict";
import { inert } from "../../cli/format.ts";
import { createProject } from "../../db/projects.ts";
import { cli } from "../_helpers/cli.ts";
import { harnessTest, postQueued, randomEntry } from "../_helpers/harness.ts";

/** Retitles and clears a terminal when printed raw. */
const TITLE_AND_CLEAR = "\u001b]0;PWNED\u0007\u001b[2J";
/** A C1 control (NEL) and a right-to-left override. */
const C1_AND_BIDI = "\u0085\u202e";
/** C1 controls as raw header bytes (NEL, CSI). */
const C1_BYTES = "\u0085\u009b";

/** Whether `text` holds a character a terminal acts on or hides. */
function hasUnsafe(text: string): boolean {
  // The test's own list, independent of the code under test.
  for (const c of text) {
    const code = c.codePointAt(0)!;
    if (code < 0x20 && c !== "\n") return true;
    if (code >= 0x7f && code <= 0x9f) return true;
    if (code >= 0x202a && code <= 0x202e) return true;
    if (code >= 0x2066 && code <= 0x2069) return true;
    if (code === 0x200b || code === 0x200e || code === 0x200f) return true;
  }
  return false;
}

Deno.test("inert shows controls, DEL, bidi and zero-width characters as escapes and leaves the rest", () => {
  assert.equal(
    inert(`a${TITLE_AND_CLEAR}b`),
    "a\\u{1b}]0;PWNED\\u{7}\\u{1b}[2Jb",
  );
  assert.equal(
    inert("x\u007f\u0085\u202e\u2066\u200by"),
    "x\\u{7f}\\u{85}\\u{202e}\\u{2066}\\u{200b}y",
  );
  assert.equal(inert("café ✓ 日本 \t"), "café ✓ 日本 \\u{9}");
});

harnessTest(
  "stats prints a sender's hostile appid and origin inert, and --json exactly",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    await postQueued(
      h,
      randomEntry({
        projectId: project.id,
        appid: TITLE_AND_CLEAR + C1_AND_BIDI,
      }),
    );
    await postQueued(h, randomEntry({ projectId: project.id }), {
      Origin: `https://x.example.com${C1_BYTES}`,
    });
    await h.process();
    const run = await cli(h.kv, ["stats", project.id]);
    assert.equal(run.code, 0, run.stderr);
    assert.ok(!hasUnsafe(run.stdout), JSON.stringify(run.stdout));
    assert.match(
      run.stdout,
      /\\u\{1b\}\]0;PWNED\\u\{7\}\\u\{1b\}\[2J\\u\{85\}\\u\{202e\}/,
    );
    assert.match(run.stdout, /https:\/\/x\.example\.com\\u\{85\}\\u\{9b\}/);
    const exact = JSON.parse(
      (await cli(h.kv, ["stats", project.id, "--json"])).stdout,
    );
    const sent = exact.recent.map((r: { appid?: string; origin?: string }) =>
      r.appid ?? r.origin
    );
    assert.deepEqual(
      sent.sort(),
      [
        TITLE_AND_CLEAR + C1_AND_BIDI,
        `https://x.example.com${C1_BYTES}`,
      ].sort(),
    );
  },
);

harnessTest(
  "project list, show and stats print hostile project names inert",
  async (h) => {
    const name = `shop${TITLE_AND_CLEAR}${C1_AND_BIDI}\u200b`;
    const project = await createProject(h.kv, { name });
    for (
      const args of [
        ["project", "list"],
        ["project", "show", project.id],
        ["stats", project.id],
      ]
    ) {
      const run = await cli(h.kv, args);
      assert.equal(run.code, 0, run.stderr);
      assert.ok(!hasUnsafe(run.stdout), `${args.join(" ")}: ${run.stdout}`);
      assert.match(run.stdout, /shop\\u\{1b\}\]0;PWNED/);
    }
    const listed = JSON.parse(
      (await cli(h.kv, ["project", "list", "--json"])).stdout,
    );
    assert.equal(listed[0].name, name);
  },
);

harnessTest(
  "project list tells apart projects whose names look the same",
  async (h) => {
    const plain = await createProject(h.kv, { name: "shop" });
    const hidden = await createProject(h.kv, { name: "shop\u200b" });
    const run = await cli(h.kv, ["project", "list"]);
    const lines = run.stdout.split("\n").filter((l) => l.includes("shop"));
    assert.equal(lines.length, 2);
    assert.ok(lines.some((l) => l.includes(plain.id) && /shop\s/.test(l)));
    assert.ok(
      lines.some((l) => l.includes(hidden.id) && l.includes("shop\\u{200b}")),
    );
  },
);

harnessTest(
  "logs, rejected and errors print a sender's hostile entry inert",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    const hostile = TITLE_AND_CLEAR + C1_AND_BIDI;
    const entry = {
      projectId: project.id,
      level: "error",
      data: { title: hostile, stack: `at ${hostile} (app.js:1:2)` },
      context: { [hostile]: hostile },
    };
    await postQueued(h, randomEntry(entry), {
      Origin: "https://app.example.com",
    });
    await postQueued(h, randomEntry(entry), {
      Origin: `https://x.example.com${C1_BYTES}`,
    });
    await h.process();
    for (const command of ["logs", "rejected", "errors"]) {
      const run = await cli(h.kv, [command, project.id], { now: h.clock.now });
      assert.equal(run.code, 0, run.stderr);
      assert.ok(!hasUnsafe(run.stdout), `${command}: ${run.stdout}`);
      // JSON escapes the controls it knows, inert the rest.
      assert.match(run.stdout, /\\u(?:\{1b\}|001b)\]0;PWNED/, command);
      // --json is exact, and inert too: JSON escapes C1 and bidi characters.
      const json = await cli(h.kv, [command, project.id, "--json"], {
        now: h.clock.now,
      });
      assert.equal(json.code, 0, json.stderr);
      assert.ok(!hasUnsafe(json.stdout), `${command} --json: ${json.stdout}`);
      assert.match(json.stdout, /\\u0085\\u202e/, command);
    }
    const [log] = (await cli(h.kv, ["logs", project.id, "--json"], {
      now: h.clock.now,
    })).stdout.trim().split("\n").map((line) => JSON.parse(line));
    assert.equal(log.data.title, hostile);
  },
);

harnessTest(
  "an aggregation's columns named by a hostile field and error lines echoing a hostile argument are inert",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    const key = TITLE_AND_CLEAR + C1_AND_BIDI;
    await postQueued(
      h,
      randomEntry({ projectId: project.id, data: { [key]: "x" } }),
      { Origin: "https://app.example.com" },
    );
    await h.process();
    const table = await cli(h.kv, [
      "logs",
      project.id,
      "--query",
      `* | count by (data.${key})`,
    ], { now: h.clock.now });
    assert.equal(table.code, 0, table.stderr);
    assert.ok(!hasUnsafe(table.stdout), table.stdout);
    assert.match(table.stdout, /data\.\\u\{1b\}\]0;PWNED/);
    for (
      const args of [
        ["logs", key],
        ["logs", project.id, "--since", key],
        ["errors", project.id, key],
        [key],
      ]
    ) {
      const run = await cli(h.kv, args, { now: h.clock.now });
      assert.notEqual(run.code, 0, args.join(" "));
      assert.ok(!hasUnsafe(run.stderr), `${args.join(" ")}: ${run.stderr}`);
      assert.match(run.stderr, /\\u\{1b\}\]0;PWNED/, args.join(" "));
    }
  },
);
