import assert from "node:assert/strict";
import { listAudit, recordAudit } from "../../db/audit.ts";
import { createReadToken, findReadToken } from "../../db/tokens.ts";
import {
  logChunksPrefix,
  rejectionKey,
  seenSignatureKey,
  statsPrefix,
} from "../../db/keys.ts";
import { deleteProject } from "../../db/deletion.ts";
import {
  addLevel,
  allowValue,
  createProject,
  getProject,
  MAX_ALLOWED_VALUES,
  MAX_LEVELS,
} from "../../db/projects.ts";
import { InvalidValueError, validateAllowValue } from "../../db/validation.ts";
import {
  assertStoredOnce,
  kvTest,
  postEntries,
  postQueued,
  projectTest,
  randomEntry,
} from "../_helpers/harness.ts";

projectTest(
  "deleteProject removes the project and everything under it, counting entries not pages",
  async (h, project) => {
    const kept = await h.project();
    const origin = { Origin: "https://app.example.com" };
    // Three entries in one commit: one batch, one page.
    await Promise.all(
      [1, 2, 3].map(() =>
        postQueued(h, randomEntry({ projectId: project.id }), origin)
      ),
    );
    await postEntries(h, project.id, { origin: "https://evil.example.net" });
    await postQueued(h, randomEntry({ projectId: kept.id }), origin);
    await assertStoredOnce(h, kept.id, "origin");
    assert.equal((await h.logs(project.id)).length, 3);
    const chunks = await Array.fromAsync(
      h.kv.list({ prefix: logChunksPrefix(project.id) }),
    );
    assert.ok(chunks.length < 3, "the entries share a chunk");
    await h.kv.set(seenSignatureKey(project.id, "A".repeat(64)), "e1");
    const { token } = await createReadToken(h.kv, {
      projectId: project.id,
      name: "ci",
      createdBy: "admin",
    });
    await recordAudit(h.kv, {
      projectId: project.id,
      actor: "admin",
      action: "project.allow",
    });

    assert.equal(await deleteProject(h.kv, project.id), 3);

    // Its read tokens read nothing any more, and its audit log is gone.
    assert.equal(await findReadToken(h.kv, token), null);
    assert.deepEqual(await listAudit(h.kv, project.id), []);

    assert.equal(await getProject(h.kv, project.id), null);
    assert.deepEqual(await h.logs(project.id), []);
    for (
      const prefix of [
        statsPrefix(project.id),
        rejectionKey(project.id, 0).slice(0, 2),
        seenSignatureKey(project.id, "").slice(0, 2),
      ]
    ) {
      assert.deepEqual(await Array.fromAsync(h.kv.list({ prefix })), []);
    }
    assert.equal((await h.logs(kept.id)).length, 1);
  },
);

kvTest(
  "an allow-list and the custom levels are bounded, so the project record stays small",
  async (kv) => {
    const values = Array.from(
      { length: MAX_ALLOWED_VALUES },
      (_, i) => `https://app${i}.example.com`,
    );
    await assert.rejects(
      createProject(kv, {
        name: "too many",
        allow: [...values, "https://one-more.example.com"],
      }),
      InvalidValueError,
    );
    const project = await createProject(kv, { name: "full", allow: values });
    await assert.rejects(
      allowValue(kv, project.id, "https://one-more.example.com"),
      /holds at most 100 values; remove one first/,
    );
    // A value already listed is no addition.
    await allowValue(kv, project.id, values[0]!);
    for (let i = 0; i < MAX_LEVELS; i++) {
      await addLevel(kv, project.id, `level${i}`);
    }
    await assert.rejects(
      addLevel(kv, project.id, "one_more"),
      /at most 50 custom levels; remove one first/,
    );
    const stored = await getProject(kv, project.id);
    assert.equal(stored?.settings.allowedOrigin.length, MAX_ALLOWED_VALUES);
    assert.equal(stored?.levels.length, MAX_LEVELS);
  },
);

Deno.test("an origin of the right shape that is no URL is refused as a value, not thrown as a TypeError", () => {
  for (
    const value of ["http://a:99999", "https://999.1.1.1", "http://[:::::]"]
  ) {
    assert.throws(
      () => validateAllowValue(value),
      (error) =>
        error instanceof InvalidValueError &&
        error.message === `Cannot allow "${value}": it is no valid origin`,
      value,
    );
  }
  // Its neighbours still pass.
  assert.equal(validateAllowValue("http://[::1]:8080"), "http://[::1]:8080");
  assert.equal(validateAllowValue("https://10.0.0.1"), "https://10.0.0.1");
});
