/**
 * Retention by filter: rules parsed and refused with a clear message, the
 * longest matching rule winning, and the merger deleting a chunk once every
 * level it holds is past its time; `deno task project retention-rules`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { getProject } from "../../db/projects.ts";
import {
  addRetentionRule,
  levelRetentionMs,
  parseRetentionRule,
} from "../../db/retention_rules.ts";
import { mergeProject } from "../../db/storage/merge.ts";
import { DAY_MS } from "../../domain/entry.ts";
import { assertRefused, cli, json } from "../_helpers/cli.ts";
import {
  type Harness,
  harnessTest,
  ORIGIN,
  postQueued,
  projectTest,
  randomEntry,
} from "../_helpers/harness.ts";

/** A project keeping info 3 days and errors `errorDays`, 30 days the rest. */
async function withRules(h: Harness, errorDays: number) {
  const project = await h.project();
  await addRetentionRule(h.kv, project.id, "level<=info", 3);
  await addRetentionRule(h.kv, project.id, "level>=error", errorDays);
  return project;
}

harnessTest(
  "an entry is kept as long as the longest rule matching its level, else the project's retention",
  async (h) => {
    const project = await withRules(h, 90);
    const saved = (await getProject(h.kv, project.id))!;
    assert.equal(levelRetentionMs(saved, "info"), 3 * DAY_MS);
    assert.equal(levelRetentionMs(saved, "warning"), 30 * DAY_MS);
    assert.equal(levelRetentionMs(saved, "critical"), 90 * DAY_MS);
    assert.equal(levelRetentionMs(saved, "audit"), 30 * DAY_MS);
    await addRetentionRule(h.kv, project.id, "level=audit", 7);
    assert.equal(
      levelRetentionMs((await getProject(h.kv, project.id))!, "audit"),
      7 * DAY_MS,
    );
  },
);

harnessTest(
  "the merger deletes info entries past their rule and keeps errors for theirs",
  async (h) => {
    const project = await withRules(h, 60);
    const send = async (level: string) => {
      await postQueued(h, randomEntry({ projectId: project.id, level }), {
        Origin: ORIGIN,
      });
      await h.process();
    };
    await send("info");
    await send("warning");
    await send("error");
    const levels = async () => (await h.logs(project.id)).map((r) => r.level);
    const start = h.clock.now();
    await mergeProject(h.kv, project.id, { now: start + 2 * DAY_MS });
    assert.deepEqual(await levels(), ["info", "warning", "error"]);
    await mergeProject(h.kv, project.id, { now: start + 4 * DAY_MS });
    assert.deepEqual(await levels(), ["warning", "error"]);
    await mergeProject(h.kv, project.id, { now: start + 31 * DAY_MS });
    assert.deepEqual(await levels(), ["error"]);
    await mergeProject(h.kv, project.id, { now: start + 61 * DAY_MS });
    assert.deepEqual(await levels(), []);
  },
);

Deno.test("a retention rule refuses a filter or days it cannot read, saying what it expects", () => {
  assert.throws(
    () => parseRetentionRule("severity<=info", 3),
    /Cannot read the filter "severity<=info": expected "level"/,
  );
  assert.throws(
    () => parseRetentionRule("level<=audit", 3),
    /only info, warning, error and critical are ordered/,
  );
  assert.throws(
    () => parseRetentionRule("level<=info", 0),
    /Cannot keep entries for "0" days/,
  );
  assert.deepEqual(parseRetentionRule(" level >= error ", 90), {
    filter: "level>=error",
    op: ">=",
    level: "error",
    days: 90,
  });
});

projectTest(
  "project retention-rules adds, lists and removes rules, refusing bad ones in one line",
  async (h, project) => {
    const rules = (...args: string[]) =>
      cli(h.kv, ["project", "retention-rules", project.id, ...args]);
    const added = json(
      await rules("--add", "level<=info", "--days", "3", "--json"),
    );
    assert.deepEqual(added.rules, [{ filter: "level<=info", days: 3 }]);
    const text = await rules();
    assert.match(text.stdout, /level<=info +3 days/);
    assert.match(text.stdout, /\(any other\) +30 days/);
    assertRefused(
      await rules("--add", "level<info"),
      /Cannot add a rule without --days/,
    );
    const removed = json(await rules("--remove", "level<=info", "--json"));
    assert.deepEqual(removed.rules, []);
    assertRefused(
      await rules("--remove", "level<=info"),
      /no such retention rule/,
    );
  },
);
