/**
 * A project deletion cut short after its record is gone (Ctrl-C, a crash, a
 * KV error) is finished: by `project delete` run again, by its id or its
 * name, and by the merger's rounds alone, a bounded part each; entries that
 * still arrive for the project meanwhile are refused. Nothing naming the
 * project is left.
 *
 * @module
 */
import assert from "node:assert/strict";
import { putNewAlertRule } from "../../db/alerts.ts";
import { recordAudit } from "../../db/audit.ts";
import { deleteProject } from "../../db/deletion.ts";
import { projectKey } from "../../db/keys.ts";
import { createProject, getProject, type Project } from "../../db/projects.ts";
import { uploadSourceMap } from "../../db/sourcemaps.ts";
import { createReadToken } from "../../db/tokens.ts";
import { saveView } from "../../db/views.ts";
import { createMerger } from "../../queue/merger.ts";
import { cli } from "../_helpers/cli.ts";
import {
  globalRejected,
  type Harness,
  ORIGIN,
  postEntries,
  postQueued,
  projectTest,
  randomEntry,
} from "../_helpers/harness.ts";
import { kvWith } from "../_helpers/kv_with.ts";

/** A small valid source map. */
const MAP = new TextEncoder().encode(JSON.stringify({
  version: 3,
  sources: ["a.js"],
  names: [],
  mappings: "AAAA",
}));

/**
 * Gives the project one of each thing stored under it: entries (with an
 * error group and usage), a saved view, a read token, an audit event, a
 * source map and an alert rule.
 */
async function seed(h: Harness, project: Project): Promise<void> {
  await postEntries(h, project.id, { origin: ORIGIN, count: 3 });
  await postQueued(h, randomEntry({ projectId: project.id, level: "error" }), {
    Origin: ORIGIN,
  });
  await h.process();
  await saveView(h.kv, project.id, { name: "Errors", query: "?level=error" });
  await createReadToken(h.kv, {
    projectId: project.id,
    name: "ci",
    createdBy: "test",
  });
  await recordAudit(h.kv, {
    projectId: project.id,
    actor: "admin",
    action: "settings.allow",
  });
  await uploadSourceMap(h.kv, {
    projectId: project.id,
    release: "1.0.0",
    url: "app.min.js",
    bytes: MAP,
    now: h.clock.now(),
  });
  await putNewAlertRule(h.kv, {
    id: "r1",
    projectId: project.id,
    query: "level:error",
    everyMs: 0,
    webhook: "https://hooks.example.com/",
    secret: "whsec_x",
    createdAt: h.clock.now(),
  });
}

/**
 * The keys whose key or value names `projectId`, but for the service's own
 * audit log (it records the deletion) and the ring of entries that named no
 * project (entries refused once the record was gone).
 */
async function naming(kv: Deno.Kv, projectId: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of kv.list({ prefix: [] })) {
    const key = JSON.stringify(entry.key);
    if (String(entry.key[0]).startsWith("audit") && entry.key[1] === "") {
      continue;
    }
    if (entry.key[0] === "global_rejected_entries") continue;
    const value = entry.value instanceof Uint8Array
      ? new TextDecoder().decode(entry.value)
      : String(entry.value);
    if (key.includes(projectId) || value.includes(projectId)) found.push(key);
  }
  return found;
}

/** `kv` whose listings fail once the project's record is gone. */
function cutAfterRecord(kv: Deno.Kv, projectId: string): Deno.Kv {
  return kvWith(kv, {
    list: ((selector: Deno.KvListSelector, options?: Deno.KvListOptions) =>
      (async function* () {
        if ((await kv.get(projectKey(projectId))).versionstamp === null) {
          throw new Error("interrupted");
        }
        yield* kv.list(selector, options);
      })()) as unknown as Deno.Kv["list"],
  });
}

/** Seeds the project and deletes it, cut short right after its record went. */
async function cutShort(h: Harness, project: Project): Promise<void> {
  await seed(h, project);
  assert.ok((await naming(h.kv, project.id)).length > 10);
  await assert.rejects(
    deleteProject(cutAfterRecord(h.kv, project.id), project.id),
    /interrupted/,
  );
  assert.equal(await getProject(h.kv, project.id), null);
}

projectTest(
  "project delete cut short after the record's commit is finished by running it again",
  async (h, project) => {
    await seed(h, project);
    // The command stops with the error, as on a crash (cli/main.ts prints
    // it and exits 1).
    await assert.rejects(
      cli(cutAfterRecord(h.kv, project.id), [
        "project",
        "delete",
        project.id,
        "--yes",
      ]),
      /interrupted/,
    );
    assert.equal(await getProject(h.kv, project.id), null);
    assert.notDeepEqual(await naming(h.kv, project.id), []);

    const again = await cli(h.kv, ["project", "delete", project.id, "--yes"]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^Deleted project "test" \(.+\) and \d+ entr/);
    assert.deepEqual(await naming(h.kv, project.id), []);
    const gone = await cli(h.kv, ["project", "delete", project.id, "--yes"]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /Cannot find project/);
  },
);

projectTest(
  "a project delete cut short is finished by its name too, the other projects kept",
  async (h, project) => {
    const kept = await createProject(h.kv, { name: "kept", allow: [ORIGIN] });
    await postEntries(h, kept.id, { origin: ORIGIN });
    await cutShort(h, project);
    const again = await cli(h.kv, ["project", "delete", "test", "--yes"]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, new RegExp(`"test" \\(${project.id}\\)`));
    assert.deepEqual(await naming(h.kv, project.id), []);
    assert.equal((await h.logs(kept.id)).length, 1);
    assert.notEqual(await getProject(h.kv, kept.id), null);
  },
);

projectTest(
  "the maintenance round alone finishes a deletion cut short, and entries arriving meanwhile are refused",
  async (h, project) => {
    await cutShort(h, project);
    const before = await naming(h.kv, project.id);
    await postEntries(h, project.id, { origin: ORIGIN, count: 2 });
    await h.process();
    assert.equal((await globalRejected(h.kv)).unknown_project, 2);
    assert.deepEqual(await naming(h.kv, project.id), before);
    await h.pipeline.merger!.round();
    assert.deepEqual(await naming(h.kv, project.id), []);
  },
);

projectTest(
  "a round deletes a bounded part of a deletion cut short, and the next rounds the rest",
  async (h, project) => {
    await cutShort(h, project);
    const merger = createMerger({ kv: h.kv, deletionKeysPerRound: 5 });
    let left = (await naming(h.kv, project.id)).length;
    let rounds = 0;
    while (left > 0) {
      await merger.round();
      const now = (await naming(h.kv, project.id)).length;
      assert.ok(now < left, "each round deletes some");
      // Past the bound, only the project's one token goes, with its hash
      // and its name's key.
      assert.ok(left - now <= 5 + 3, "and no more than its bound");
      left = now;
      rounds++;
    }
    assert.ok(rounds > 3, `${rounds} rounds`);
    await merger.stop();
  },
);
