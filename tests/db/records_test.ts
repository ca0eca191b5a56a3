/**
 * A text longer than any stored record's name (an email, a project's, a
 * view's or an alert rule's id) names none: the record functions answer "not
 * found", and never make it a database key, whose size is limited.
 *
 * @module
 */
import assert from "node:assert/strict";
import { deleteAlertRule } from "../../db/alerts.ts";
import { getProject, ProjectNotFoundError } from "../../db/projects.ts";
import {
  addUser,
  getUser,
  removeUser,
  updateUser,
  UserNotFoundError,
} from "../../db/users.ts";
import { MAX_RECORD_NAME } from "../../db/validation.ts";
import { deleteView } from "../../db/views.ts";
import { kvTest } from "../_helpers/harness.ts";

const LONG = "x".repeat(3000);

kvTest(
  "a name longer than any record's is not found, never a database error",
  async (kv) => {
    assert.ok(LONG.length > MAX_RECORD_NAME);
    assert.equal(await getUser(kv, `${LONG}@example.com`), null);
    await assert.rejects(
      removeUser(kv, `${LONG}@example.com`),
      UserNotFoundError,
    );
    await assert.rejects(
      updateUser(kv, `${LONG}@example.com`, { role: "viewer" }),
      UserNotFoundError,
    );
    assert.equal(await deleteView(kv, "p", LONG), null);
    assert.equal(await deleteAlertRule(kv, "p", LONG), false);
  },
);

kvTest(
  "a project id longer than any record's is not found, and an account given it is refused",
  async (kv) => {
    assert.equal(await getProject(kv, LONG), null);
    assert.equal(await getProject(kv, ""), null);
    const refused = (error: unknown) =>
      error instanceof ProjectNotFoundError &&
      error.message === `Cannot find project "${"x".repeat(100)}"`;
    await assert.rejects(
      addUser(kv, {
        email: "ana@example.com",
        role: "viewer",
        projects: [LONG],
        password: "correct horse battery",
      }),
      refused,
    );
    assert.equal(await getUser(kv, "ana@example.com"), null);
  },
);
