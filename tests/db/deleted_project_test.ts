/**
 * Nothing is written under a project after its deletion: a saved view, an
 * alert rule, a read token or an account's grant that was decided before
 * the deletion commits checked on the project's record and is refused; the
 * accounts given the project no longer list it; a group evicted meanwhile
 * cannot be triaged.
 *
 * @module
 */
import assert from "node:assert/strict";
import { putNewAlertRule } from "../../db/alerts.ts";
import { deleteProject } from "../../db/deletion.ts";
import {
  addErrorGroups,
  prepareErrorGroups,
  sweepErrorGroups,
} from "../../db/error_groups.ts";
import {
  changeTriage,
  GroupNotFoundError,
} from "../../db/error_group_triage.ts";
import { ProjectNotFoundError } from "../../db/projects.ts";
import { createReadToken } from "../../db/tokens.ts";
import { addUser, getUser, updateUser } from "../../db/users.ts";
import { saveView } from "../../db/views.ts";
import { fingerprintOf } from "../../domain/fingerprint.ts";
import { createId } from "../../domain/ids.ts";
import { ORIGIN, projectTest } from "../_helpers/harness.ts";

const DAY = 86_400_000;
const PASSWORD = "correct horse battery";

projectTest(
  "writes decided before a project's deletion are refused after it, and leave no key naming it",
  async (h, project) => {
    const other = await h.project([ORIGIN]);
    await addUser(h.kv, {
      email: "ana@example.com",
      role: "member",
      projects: [project.id, other.id],
      password: PASSWORD,
    });
    await deleteProject(h.kv, project.id);
    // What a request that read the project just before would write now.
    await assert.rejects(
      saveView(h.kv, project.id, { name: "Errors", query: "?level=error" }),
      ProjectNotFoundError,
    );
    await assert.rejects(
      putNewAlertRule(h.kv, {
        id: "r1",
        projectId: project.id,
        query: "level:error",
        everyMs: 0,
        webhook: "https://hooks.example.com/",
        secret: "whsec_x",
        createdAt: h.clock.now(),
      }),
      ProjectNotFoundError,
    );
    await assert.rejects(
      createReadToken(h.kv, {
        projectId: project.id,
        name: "ci",
        createdBy: "cli",
      }),
      ProjectNotFoundError,
    );
    await assert.rejects(
      updateUser(h.kv, "ana@example.com", { projects: [project.id] }),
      ProjectNotFoundError,
    );
    assert.deepEqual(
      (await getUser(h.kv, "ana@example.com"))!.projects,
      [other.id],
    );
    const left: string[] = [];
    for await (const entry of h.kv.list({ prefix: [] })) {
      const text = JSON.stringify(entry.key) +
        (entry.value instanceof Uint8Array
          ? new TextDecoder().decode(entry.value)
          : "");
      if (text.includes(project.id)) left.push(JSON.stringify(entry.key));
    }
    assert.deepEqual(left, []);
  },
);

projectTest(
  "a group deleted since it was found cannot be triaged, and leaves no triage row",
  async (h, project) => {
    const t0 = h.clock.now();
    const retentionMs = project.retentionDays * DAY;
    const record = {
      id: createId(t0),
      receivedAt: t0,
      level: "error",
      data: { title: "Boom" },
      device: {},
      context: {},
      auth: "origin" as const,
      origin: ORIGIN,
    };
    const op = h.kv.atomic();
    addErrorGroups(
      op,
      await prepareErrorGroups(h.kv, project.id, [record], {
        now: t0,
        retentionMs,
      }),
    );
    assert.ok((await op.commit()).ok);
    const fp = fingerprintOf(record).fingerprint;
    // Found; then, before the change reads its rows, deleted past the
    // retention by a sweep.
    const sweepFirst = new Proxy(h.kv, {
      get(target, prop) {
        if (prop === "getMany") {
          return async (keys: Deno.KvKey[]) => {
            if (keys.some((k) => k[0] === "error_group_triage")) {
              await sweepErrorGroups(target, project.id, {
                now: t0 + retentionMs + DAY,
                retentionMs,
              });
            }
            return await target.getMany(keys);
          };
        }
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    await assert.rejects(
      changeTriage(sweepFirst, project.id, fp, { action: "resolve" }, {
        now: t0 + 1000,
        actor: "cli",
      }),
      GroupNotFoundError,
    );
    const rows = await Array.fromAsync(
      h.kv.list({ prefix: ["error_group_triage", project.id] }),
    );
    assert.deepEqual(rows, []);
  },
);

projectTest(
  "an account may be given 150 projects, more than one commit may check, and loses the one deleted",
  async (h, project) => {
    const ids = [project.id];
    for (let i = 0; i < 149; i++) ids.push((await h.project([ORIGIN])).id);
    await addUser(h.kv, {
      email: "bo@example.com",
      role: "viewer",
      projects: ids,
      password: PASSWORD,
    });
    const updated = await updateUser(h.kv, "bo@example.com", {
      projects: ids.slice(1),
    });
    assert.equal(updated.projects.length, 149);
    await deleteProject(h.kv, ids[1]!);
    assert.deepEqual(
      (await getUser(h.kv, "bo@example.com"))!.projects,
      ids.slice(2),
    );
  },
);
