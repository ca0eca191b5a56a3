/**
 * The dashboard's alerts page: adding a rule (its secret shown once),
 * refusals with their reason, removing a rule, the delivery history, and
 * the form token.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAlertRules } from "../../db/alerts.ts";
import {
  post,
  projectPage,
  signedInProjectTest,
  signedInTest,
  store,
  textOf,
  withSignedIn,
} from "../_helpers/dashboard.ts";
import { alertLoopOn, startReceiver } from "../_helpers/webhook_receiver.ts";

signedInTest(
  "adding an alert rule on the dashboard stores it and shows its secret once",
  async (h, browser) => {
    const { project, path } = await projectPage(h, "alerts");
    const empty = await (await browser.get(path)).text();
    assert.ok(empty.includes('id="no-rules"'));
    const res = await browser.post(`${path}/add`, {
      query: "level:critical",
      webhook: "https://hooks.example.com/a",
      threshold: "3",
      window: "10m",
      every: "",
    });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), `${path}?done=added`);
    const [rule] = await listAlertRules(h.kv, project.id);
    assert.equal(rule?.threshold, 3);
    assert.equal(rule?.windowMs, 600_000);
    const page = await (await browser.get(`${path}?done=added`))
      .text();
    assert.ok(page.includes(rule!.secret), "the secret is shown");
    assert.ok(textOf(page).includes("more than 3 within 10m"));
    const again = await (await browser.get(path)).text();
    assert.ok(!again.includes(rule!.secret), "and only once");
    assert.ok(again.includes(`id="rule-${rule!.id}"`));
  },
);

signedInTest(
  "a refused alert rule answers 400 with the reason and the form as sent",
  async (h, browser) => {
    const { project, path } = await projectPage(h, "alerts");
    const res = await browser.post(`${path}/add`, {
      query: "level:critical",
      webhook: "http://10.0.0.8/hook",
      threshold: "",
      window: "",
      every: "",
    });
    assert.equal(res.status, 400);
    const text = textOf(await res.text());
    assert.match(text, /ALERT_PRIVATE_TARGETS=allow/);
    assert.deepEqual(await listAlertRules(h.kv, project.id), []);
    const bad = await browser.post(`${path}/add`, {
      query: "x",
      webhook: "https://hooks.example.com/",
      threshold: "2",
      window: "ten minutes",
      every: "",
    });
    assert.equal(bad.status, 400);
    assert.match(textOf(await bad.text()), /Cannot read window "ten minutes"/);
  },
);

signedInProjectTest(
  "an alert form without its token is refused with 403",
  async (h, browser, project) => {
    const res = await post(
      h.dash,
      { ...browser, csrf: "forged" },
      `/projects/${project.id}/alerts/add`,
      {
        query: "level:critical",
        webhook: "https://hooks.example.com/a",
      },
    );
    assert.equal(res.status, 403);
    await res.body?.cancel();
    assert.deepEqual(await listAlertRules(h.kv, project.id), []);
  },
);

Deno.test("the alerts page shows a rule's deliveries, and removing the rule deletes it", async () => {
  const receiver = startReceiver();
  try {
    await withSignedIn(async (h, browser) => {
      const { project, path } = await projectPage(h, "alerts", [
        "https://app.example.com",
      ]);
      const added = await browser.post(`${path}/add`, {
        query: "level:critical",
        webhook: receiver.url,
        threshold: "",
        window: "",
        every: "",
      });
      assert.equal(added.status, 303);
      await store(h, project.id, [{ level: "critical" }]);
      h.clock.advance(3000);
      const loop = alertLoopOn(h);
      await loop.tick();
      await loop.settled();
      assert.equal(receiver.received.length, 1);
      const page = textOf(await (await browser.get(path)).text());
      assert.match(page, /Deliveries \(1\)/);
      assert.match(page, /HTTP 200/);
      const [rule] = await listAlertRules(h.kv, project.id);
      const removed = await browser.post(`${path}/remove`, {
        rule: rule!.id,
      });
      assert.equal(removed.status, 303);
      assert.deepEqual(await listAlertRules(h.kv, project.id), []);
    }, { dashboard: { allowPrivateTargets: true } });
  } finally {
    await receiver.close();
  }
});
