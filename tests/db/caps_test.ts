/**
 * The per-project caps of saved views, read tokens and alert rules hold
 * when an account sends a burst of requests at once: each writer counts
 * again after its own commit, so parallel writers cannot all pass a count
 * made before they wrote.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAlertRules } from "../../db/alerts.ts";
import {
  createReadToken,
  listReadTokens,
  MAX_TOKENS_PER_PROJECT,
} from "../../db/tokens.ts";
import { InvalidValueError } from "../../db/validation.ts";
import { listViews, MAX_VIEWS, saveView } from "../../db/views.ts";
import { addAlertRule, MAX_RULES_PER_PROJECT } from "../../alerts/rules.ts";
import { projectTest } from "../_helpers/harness.ts";

/** Runs `n` calls of `fn` at once; the number that succeeded. */
async function burst(
  n: number,
  fn: (i: number) => Promise<unknown>,
): Promise<number> {
  const settled = await Promise.allSettled(
    Array.from({ length: n }, (_, i) => fn(i)),
  );
  for (const s of settled) {
    if (s.status === "rejected") {
      assert.ok(s.reason instanceof InvalidValueError, String(s.reason));
    }
  }
  return settled.filter((s) => s.status === "fulfilled").length;
}

projectTest(
  "a burst of saved views, tokens or alert rules stops at the project's cap",
  async (h, project) => {
    const views = await burst(
      3 * MAX_VIEWS,
      (i) => saveView(h.kv, project.id, { name: `v${i}`, query: "" }),
    );
    assert.ok(views <= MAX_VIEWS, `${views} views saved`);
    assert.equal((await listViews(h.kv, project.id)).length, views);

    const tokens = await burst(
      2 * MAX_TOKENS_PER_PROJECT,
      (i) =>
        createReadToken(h.kv, {
          projectId: project.id,
          name: `t${i}`,
          createdBy: "admin",
        }),
    );
    assert.ok(tokens <= MAX_TOKENS_PER_PROJECT, `${tokens} tokens made`);
    assert.equal((await listReadTokens(h.kv, project.id)).length, tokens);

    const rules = await burst(
      3 * MAX_RULES_PER_PROJECT,
      () =>
        addAlertRule(h.kv, {
          projectId: project.id,
          query: "level:critical",
          webhook: "https://hooks.example.com/x",
        }, { allowPrivate: false }),
    );
    assert.ok(rules <= MAX_RULES_PER_PROJECT, `${rules} rules added`);
    assert.equal((await listAlertRules(h.kv, project.id)).length, rules);
  },
);
