/**
 * The dashboard's quota card (administrators only) and its usage page.
 *
 * @module
 */
import assert from "node:assert/strict";
import { getProject, type Project } from "../../db/projects.ts";
import { setQuota } from "../../db/quota.ts";
import { addRetentionRule } from "../../db/retention_rules.ts";
import {
  projectPage,
  signedInProjectTest,
  signedInTest,
  textOf,
} from "../_helpers/dashboard.ts";
import { addAccount, signInAs } from "../_helpers/dashboard_accounts.ts";
import { ORIGIN, postEntries } from "../_helpers/harness.ts";

signedInTest(
  "an administrator sets and removes a quota and spike protection on the settings page, refusals explained",
  async (h, browser) => {
    const { project, path } = await projectPage(h, "settings");
    await addRetentionRule(h.kv, project.id, "level<=info", 3);
    const page = textOf(await (await browser.get(path)).text());
    assert.match(page, /Quota and spikes/);
    assert.match(page, /level<=info kept 3 days/);
    // Each form posted in turn: saved (303, the project shows it) or
    // refused (400, the reason shown).
    const posts: {
      form: "quota" | "spike";
      fields: Record<string, string>;
      saved?: Partial<Project>;
      refused?: RegExp;
    }[] = [
      {
        form: "quota",
        fields: { per_day: "1000", per_minute: "" },
        saved: { quota: { perDay: 1000 } },
      },
      {
        form: "quota",
        fields: { per_day: "0", per_minute: "" },
        refused: /Cannot set the per-day quota to "0"/,
      },
      {
        form: "spike",
        fields: { multiple: "5", keep: "10" },
        saved: { spike: { multiple: 5, keep: 10 } },
      },
      { form: "spike", fields: { multiple: "5", keep: "one" } },
    ];
    for (const { form, fields, saved, refused } of posts) {
      const res = await browser.post(`${path}/${form}`, fields);
      assert.equal(res.status, saved ? 303 : 400, JSON.stringify(fields));
      if (refused) assert.match(textOf(await res.text()), refused);
      if (saved === undefined) continue;
      const stored = (await getProject(h.kv, project.id))!;
      for (const [name, value] of Object.entries(saved)) {
        assert.deepEqual(stored[name as keyof Project], value);
      }
    }
    await browser.post(`${path}/quota`, { per_day: "", per_minute: "" });
    await browser.post(`${path}/spike`, { multiple: "", keep: "" });
    const cleared = (await getProject(h.kv, project.id))!;
    assert.equal(cleared.quota, undefined);
    assert.equal(cleared.spike, undefined);
  },
);

signedInProjectTest(
  "a member sees no quota card and cannot change a quota",
  async (h, _browser, project) => {
    await addAccount(h.kv, "dev@example.com", "member", [project.id]);
    const dev = await signInAs(h.dash, "dev@example.com");
    const path = `/projects/${project.id}/settings`;
    const page = textOf(await (await dev.get(path)).text());
    assert.doesNotMatch(page, /Quota and spikes/);
    const res = await dev.post(`${path}/quota`, { per_day: "1" });
    assert.equal(res.status, 403);
    assert.equal((await getProject(h.kv, project.id))!.quota, undefined);
  },
);

signedInProjectTest(
  "the usage page shows a project's day: accepted, stored, over quota and the quota used",
  async (h, browser, project) => {
    await setQuota(h.kv, project.id, { perDay: 2 });
    await postEntries(h, project.id, { origin: ORIGIN, count: 3 });
    await h.process();
    const res = await browser.get("/usage");
    assert.equal(res.status, 200);
    const text = textOf(await res.text());
    assert.match(text, /quota 2 a day; no spike protection/);
    assert.match(text, /2026-01-01 3 2 1 0 0 \d+ 100%/);
  },
);
