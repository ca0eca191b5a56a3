/**
 * Scrubbing and retention rules changed on the settings page by an admin:
 * a rule added (and its effect on the next stored entry), tried with a dry
 * run that saves nothing, removed; bad input answered with the page and the
 * reason; members and viewers refused and shown no form; every change in
 * the project's audit log, as the CLI's. Also the audit row of a source map
 * uploaded over HTTP, and the daily budget such rows count against: their
 * token's creator's.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAudit, MAX_EVENTS_PER_ACTOR_DAY } from "../../db/audit.ts";
import { getProject } from "../../db/projects.ts";
import { addRetentionRule } from "../../db/retention_rules.ts";
import { addScrubRule, scrubRules } from "../../db/scrub.ts";
import { createReadToken } from "../../db/tokens.ts";
import { signInNew } from "../_helpers/dashboard_accounts.ts";
import {
  apiRequest,
  createTokenOnPage,
  projectPage,
  signedInProjectTest,
  signedInTest,
  store,
  textOf,
} from "../_helpers/dashboard.ts";
import { SMALLEST_MAP } from "../_helpers/stacks.ts";

const EMAIL = "ann.smith@example.com";

/** The project's audit log as `action detail` lines, oldest first. */
async function auditLines(kv: Deno.Kv, projectId: string): Promise<string[]> {
  return (await listAudit(kv, projectId)).reverse().map((e) =>
    `${e.actor} ${e.action} ${e.detail}`
  );
}

signedInTest(
  "a scrubbing rule added on the settings page scrubs the next stored entry and is audited",
  async (h, browser) => {
    const { project, path: settings } = await projectPage(h, "settings");
    const page = await (await browser.get(settings)).text();
    assert.match(page, /id="scrub-form"/);
    const res = await browser.post(`${settings}/scrub/add`, {
      kind: "detector",
      value: "email",
      action: "mask",
    });
    assert.equal(res.status, 303);
    assert.match(res.headers.get("location")!, /done=scrub-add#scrubbing$/);
    const after = textOf(await (await browser.get(settings)).text());
    assert.match(after, /detector:email email \(detector\) mask/);
    const [entry] = await store(h, project.id, [
      { message: `signed up as ${EMAIL}`, data: { contact: EMAIL } },
    ]);
    assert.ok(!JSON.stringify(entry).includes(EMAIL), "the email is masked");
    assert.match(String(entry!.data!.contact), /\.com$/);
    assert.deepEqual(await auditLines(h.kv, project.id), [
      "admin scrub.add detector:email: detector email → mask",
    ]);
  },
);

signedInProjectTest(
  "a dry run shows what a rule would change in recent entries and saves nothing",
  async (h, browser, project) => {
    await store(h, project.id, [{ data: { contact: EMAIL } }, { data: {} }]);
    const res = await browser.post(
      `/projects/${project.id}/settings/scrub/dry-run`,
      { kind: "key", value: "contact", action: "remove" },
    );
    assert.equal(res.status, 200);
    const text = textOf(await res.text());
    assert.match(text, /Dry run of key:contact \(remove\), not saved/);
    assert.match(text, /Of the latest 2 entries, 1 would change/);
    assert.match(
      text,
      new RegExp(`data\\.contact "${EMAIL}" "\\[Filtered\\]"`),
    );
    const saved = (await getProject(h.kv, project.id))!;
    assert.deepEqual(scrubRules(saved), []);
    assert.deepEqual(await auditLines(h.kv, project.id), []);
    const [, , next] = await store(h, project.id, [{
      data: { contact: EMAIL },
    }]);
    assert.equal(next!.data!.contact, EMAIL, "nothing was saved");
  },
);

signedInTest(
  "a scrubbing rule removed on the settings page no longer scrubs, and is audited",
  async (h, browser) => {
    const { project, path: settings } = await projectPage(h, "settings");
    await browser.post(`${settings}/scrub/add`, {
      kind: "key",
      value: "contact",
      action: "remove",
    });
    const page = await (await browser.get(settings)).text();
    assert.match(page, /aria-label="Remove rule key:contact"/);
    const res = await browser.post(`${settings}/scrub/remove`, {
      rule: "key:contact",
    });
    assert.equal(res.status, 303);
    assert.deepEqual(scrubRules((await getProject(h.kv, project.id))!), []);
    const [entry] = await store(h, project.id, [{ data: { contact: EMAIL } }]);
    assert.equal(entry!.data!.contact, EMAIL);
    assert.deepEqual(await auditLines(h.kv, project.id), [
      'admin scrub.add key:contact: key "contact" → remove',
      'admin scrub.remove key:contact: key "contact" → remove',
    ]);
  },
);

signedInTest(
  "a bad pattern, detector, kind or action is answered with the page and the reason",
  async (h, browser) => {
    const { project, path: settings } = await projectPage(h, "settings");
    const cases: [Record<string, string>, RegExp][] = [
      [
        { kind: "pattern", value: "(a+)+$", action: "remove" },
        /Cannot use pattern "\(a\+\)\+\$": a repeated group/,
      ],
      [
        { kind: "pattern", value: "([", action: "remove" },
        /not a regular expression/,
      ],
      [
        { kind: "detector", value: "phone", action: "remove" },
        /Cannot use detector "phone": expected one of email, ip, token/,
      ],
      [{ kind: "header", value: "x" }, /Cannot add a rule of kind "header"/],
      [{ kind: "key", value: "x", action: "shred" }, /Cannot use action/],
    ];
    for (const [form, reason] of cases) {
      for (const path of ["scrub/add", "scrub/dry-run"]) {
        const res = await browser.post(`${settings}/${path}`, form);
        assert.equal(res.status, 400, `${path} ${form.value}`);
        const html = await res.text();
        assert.match(textOf(html), reason);
        assert.match(html, /class="field-error" role="alert"/);
      }
    }
    const absent = await browser.post(`${settings}/scrub/remove`, {
      rule: "key:absent",
    });
    assert.equal(absent.status, 400);
    assert.match(textOf(await absent.text()), /no such rule/);
    assert.deepEqual(scrubRules((await getProject(h.kv, project.id))!), []);
    assert.deepEqual(await auditLines(h.kv, project.id), []);
  },
);

signedInTest(
  "retention rules are added and removed on the settings page, with the CLI's checks, and audited",
  async (h, browser) => {
    const { project, path: settings } = await projectPage(h, "settings");
    const add = await browser.post(`${settings}/retention-rules/add`, {
      filter: "level <= info",
      days: "3",
    });
    assert.equal(add.status, 303);
    assert.deepEqual(
      (await getProject(h.kv, project.id))!.retentionRules?.map((r) =>
        `${r.filter} ${r.days}`
      ),
      ["level<=info 3"],
    );
    const page = await (await browser.get(settings)).text();
    assert.match(textOf(page), /level<=info kept 3 days/);
    assert.match(page, /aria-label="Remove rule level&lt;=info"/);
    const refused: [Record<string, string>, RegExp][] = [
      [{ filter: "level~info", days: "3" }, /Cannot read the filter/],
      [{ filter: "level<=info", days: "9999" }, /from 1 to 3650/],
      [{ filter: "level<=info", days: "soon" }, /"soon" days/],
      [{ filter: "level<audit", days: "3" }, /only info, warning/],
    ];
    for (const [form, reason] of refused) {
      const res = await browser.post(`${settings}/retention-rules/add`, form);
      assert.equal(res.status, 400, form.filter);
      assert.match(textOf(await res.text()), reason);
    }
    const remove = await browser.post(`${settings}/retention-rules/remove`, {
      filter: "level<=info",
    });
    assert.equal(remove.status, 303);
    assert.equal(
      (await getProject(h.kv, project.id))!.retentionRules,
      undefined,
    );
    const again = await browser.post(`${settings}/retention-rules/remove`, {
      filter: "level<=info",
    });
    assert.equal(again.status, 400);
    assert.deepEqual(await auditLines(h.kv, project.id), [
      "admin settings.retention_rule.add level<=info 3",
      "admin settings.retention_rule.remove level<=info",
    ]);
  },
);

signedInProjectTest(
  "a member sees the rules but no form, and a member's or viewer's change is refused",
  async (h, _browser, project) => {
    await addScrubRule(h.kv, project.id, { kind: "key", key: "contact" });
    await addRetentionRule(h.kv, project.id, "level<=info", 3);
    const settings = `/projects/${project.id}/settings`;
    const member = await signInNew(h, "member@example.com", "member", [
      project.id,
    ]);
    const viewer = await signInNew(h, "viewer@example.com", "viewer", [
      project.id,
    ]);
    assert.equal((await viewer.get(settings)).status, 403, "no page at all");
    const page = await (await member.get(settings)).text();
    assert.match(textOf(page), /key:contact/);
    assert.match(textOf(page), /level<=info kept 3 days/);
    for (
      const absent of [
        "scrub-form",
        "retention-rule-form",
        "Remove rule key:contact",
        "Remove rule level&lt;=info",
        "Dry run",
      ]
    ) {
      assert.ok(!page.includes(absent), absent);
    }
    const posts: [string, Record<string, string>][] = [
      ["scrub/add", { kind: "key", value: "email", action: "remove" }],
      ["scrub/dry-run", { kind: "key", value: "email", action: "remove" }],
      ["scrub/remove", { rule: "key:contact" }],
      ["retention-rules/add", { filter: "level=error", days: "30" }],
      ["retention-rules/remove", { filter: "level<=info" }],
    ];
    for (const who of [member, viewer]) {
      for (const [path, form] of posts) {
        const res = await who.post(`${settings}/${path}`, form);
        await res.body?.cancel();
        assert.equal(res.status, 403, path);
      }
    }
    const saved = (await getProject(h.kv, project.id))!;
    assert.deepEqual(scrubRules(saved).map((r) => r.id), ["key:contact"]);
    assert.equal(saved.retentionRules?.length, 1);
    assert.deepEqual(await auditLines(h.kv, project.id), []);
  },
);

signedInProjectTest(
  "a source map uploaded over HTTP is in the project's audit log, by its token",
  async (h, _browser, project) => {
    const { token } = await createReadToken(h.kv, {
      projectId: project.id,
      name: "ci",
      scope: "upload",
      createdBy: "cli",
    });
    const res = await apiRequest(
      h,
      `/api/v1/projects/${project.id}/sourcemaps?release=1.2.0&url=app.min.js`,
      token,
      { method: "POST", body: SMALLEST_MAP },
    );
    assert.equal(res.status, 201);
    assert.deepEqual(await auditLines(h.kv, project.id), [
      "token:ci (by cli) sourcemap.upload 1 of release 1.2.0",
    ]);
  },
);

signedInProjectTest(
  "a member's upload tokens, however many, add at most its own day's budget of full audit events",
  async (h, _browser, project) => {
    const member = await signInNew(h, EMAIL, "member", [project.id]);
    const uploads = MAX_EVENTS_PER_ACTOR_DAY + 1;
    for (const name of ["ci-1", "ci-2", "ci-3"]) {
      const { token } = await createTokenOnPage(member, project.id, {
        name,
        scope: "upload",
      });
      for (let i = 0; i < uploads; i++) {
        const res = await apiRequest(
          h,
          `/api/v1/projects/${project.id}/sourcemaps?release=1.0.${i}`,
          token,
          { method: "POST", body: SMALLEST_MAP },
        );
        assert.equal(res.status, 201);
        await res.body?.cancel();
      }
    }
    const events = await listAudit(h.kv, project.id);
    const full = events.filter((e) => e.repeated === undefined);
    assert.equal(full.length, MAX_EVENTS_PER_ACTOR_DAY);
    assert.deepEqual(
      events.filter((e) =>
        e.actor !== EMAIL && !e.actor.endsWith(` (by ${EMAIL})`)
      ),
      [],
      "every event names the member, or its token and the member",
    );
    assert.equal(
      events.reduce((sum, e) => sum + (e.repeated ?? 1), 0),
      3 + 3 * uploads,
      "the rest are counted in their action's folded event",
    );
    // Past the budget, the tokens made after the first fold too.
    const folded = events.filter((e) => e.repeated !== undefined)
      .map((e) => [e.actor, e.action, e.repeated]).sort();
    assert.deepEqual(folded, [
      [EMAIL, "token.create", 2],
      [`token:ci-3 (by ${EMAIL})`, "sourcemap.upload", 3 * uploads - 199],
    ]);
  },
);
