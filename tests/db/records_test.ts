/**
 * A text longer than any stored record's name (an email, a view's or an
 * alert rule's id) names none: the record functions answer "not found", and
 * never make it a database key, whose size is limited.
 *
 * @module
 */
import assert from "node:assert/strict";
import { deleteAlertRule } from "../../db/alerts.ts";
import {
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
    assert.equal(await deleteView(kv, "p", LONG), false);
    assert.equal(await deleteAlertRule(kv, "p", LONG), false);
  },
);
