/**
 * An error group's own page and `deno task errors PROJECT FINGERPRINT`:
 * entries with known users, environments, releases and hours sent through
 * the pipeline, then the page's HTML and the command's JSON asserted; the
 * users column of the errors list; a viewer opens the page; bad and unknown
 * fingerprints.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readGroupDetail } from "../../db/error_group_detail.ts";
import { fingerprintOf } from "../../domain/fingerprint.ts";
import { ErrorGroupPage } from "../../dashboard/pages/error_group.tsx";
import { cli } from "../_helpers/cli.ts";
import { addAccount, signInAs } from "../_helpers/dashboard_accounts.ts";
import {
  dashboardTest,
  type DashHarness,
  signIn,
  store,
  textOf,
} from "../_helpers/dashboard.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const STACK =
  "Error: Payment failed\n    at pay (https://shop.example/app.js:3:9)";

function payment(n: number, context: Record<string, unknown>) {
  return {
    level: "error",
    data: { title: `Payment ${n} failed`, stack: STACK },
    context,
  };
}

/**
 * Five entries of one group over three days (users u1 twice, u2, u3 and one
 * without a user; releases 1.0, 1.1, 1.2), besides another group's and an
 * info entry with the same title; returns the group's fingerprint.
 */
async function seed(h: DashHarness, projectId: string): Promise<string> {
  await store(h, projectId, [
    payment(1, { userId: "u1", environment: "production", release: "1.0" }),
    payment(2, { userId: "u2", environment: "production", release: "1.0" }),
    { level: "error", data: { title: "Disk full" }, context: { userId: "u9" } },
    { level: "info", data: { title: "Payment 3 failed", stack: STACK } },
  ]);
  h.clock.advance(3 * HOUR);
  await store(h, projectId, [
    payment(4, { userId: "u1", environment: "staging", release: "1.1" }),
    payment(5, { environment: "production", release: "1.1" }),
  ]);
  h.clock.advance(2 * DAY);
  await store(h, projectId, [
    payment(6, { userId: "u3", environment: "production", release: "1.2" }),
  ]);
  h.clock.advance(HOUR);
  return fingerprintOf({ data: { title: "Payment 1 failed", stack: STACK } })
    .fingerprint;
}

function countsOf(html: string, id: string): number[] {
  const m = new RegExp(`id="${id}"[^>]*data-counts="([\\d,]+)"`).exec(html);
  assert.ok(m, `chart ${id}`);
  return m[1]!.split(",").map(Number);
}

const sum = (counts: number[]) => counts.reduce((a, b) => a + b, 0);

dashboardTest(
  "an error group's page shows its counts over time, users, environments, releases and latest stack",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    const fp = await seed(h, project.id);
    const browser = await signIn(h.dash);
    const res = await browser.get(`/projects/${project.id}/errors/${fp}`);
    assert.equal(res.status, 200);
    const html = await res.text();
    const text = textOf(html);
    assert.match(html, /id="group-title">Payment &lt;n&gt; failed</);
    assert.match(html, /id="group-count">5</);
    assert.match(html, /id="group-users">3</);
    const hours = countsOf(html, "chart-hours");
    assert.equal(hours.length, 24);
    assert.equal(sum(hours), 1, "one entry in the last 24 hours");
    assert.equal(hours[22], 1, "an hour ago");
    const days = countsOf(html, "chart-days");
    assert.equal(days.length, 14);
    assert.equal(sum(days), 5, "not the info entry nor the other group");
    assert.match(html, /aria-label="5 entries in the last 14 days/);
    assert.match(text, /context\.userId Entries u1 2 u2 1 u3 1/);
    assert.match(text, /context\.environment Entries production 4 staging 1/);
    // Releases, the most recently seen first, with their counts.
    assert.match(
      text,
      /Release Entries First seen Last seen 1\.2 1 .*? 1\.1 2 .*? 1\.0 2 /,
    );
    // The latest entry with its stack.
    assert.match(html, /class="stack-top">Error: Payment failed\n/);
    assert.match(text, /Payment 6 failed/);
    const entries = /id="group-entries" href="([^"]+)"/.exec(html)![1]!
      .replaceAll("&amp;", "&");
    assert.match(decodeURIComponent(entries), new RegExp(`fingerprint:${fp}`));
    assert.equal((await browser.get(entries)).status, 200);
    assert.doesNotMatch(html, /id="partial"/);

    // The errors list: a users column, and a link to the page.
    const list = await (await browser.get(`/projects/${project.id}/errors`))
      .text();
    const row = new RegExp(`<tr data-fingerprint="${fp}"[\\s\\S]*?</tr>`)
      .exec(list)![0];
    assert.match(row, /class="num users">3</);
    assert.match(
      row,
      new RegExp(`class="group-page" href="[^"]*/errors/${fp}"`),
    );
  },
);

dashboardTest(
  "a group's page says partial when its time to read runs out, its users then at least",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    const fp = await seed(h, project.id);
    let t = 0;
    const detail = await readGroupDetail(h.kv, project.id, fp, {
      now: h.clock.now(),
      budgetMs: 1,
      clock: () => t += 10,
    });
    assert.ok(detail.searchedTo !== undefined, "the budget ran out");
    assert.ok(detail.total < 5);
    // The page says so, and its users are "at least".
    const page = await ErrorGroupPage({
      ctx: {
        base: "",
        nonce: "n",
        csrf: "t",
        assets: {},
        opens: () => true,
        posts: () => true,
      },
      data: {
        project: { id: project.id, name: "p" },
        detail,
        now: h.clock.now(),
      },
    }).toString();
    assert.match(page, /id="partial"/);
    assert.match(page, /id="group-users">≥ \d/);
  },
);

dashboardTest(
  "deno task errors PROJECT FINGERPRINT --json prints the group's breakdowns, and the list's objects gain users",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    const fp = await seed(h, project.id);
    const run = await cli(h.kv, ["errors", project.id, fp, "--json"], {
      clock: h.clock,
    });
    assert.equal(run.code, 0, run.stderr);
    const out = JSON.parse(run.stdout);
    assert.equal(out.fingerprint, fp);
    assert.equal(out.title, "Payment <n> failed");
    assert.equal(out.count, 5);
    assert.equal(out.users, 3);
    assert.equal(out.usersAtLeast, false);
    assert.equal(out.partial, false);
    assert.equal(out.firstRelease, "1.0");
    assert.equal(out.lastRelease, "1.2");
    assert.equal(typeof out.firstSeen, "string");
    assert.ok(Date.parse(out.lastSeen) > Date.parse(out.firstSeen));
    assert.equal(out.hourly.length, 24);
    assert.equal(out.daily.length, 14);
    assert.equal(sum(out.daily.map((d: { count: number }) => d.count)), 5);
    assert.deepEqual(out.topUsers[0], { "context.userId": "u1", count: 2 });
    assert.deepEqual(out.environments, [
      { "context.environment": "production", count: 4 },
      { "context.environment": "staging", count: 1 },
    ]);
    assert.deepEqual(
      out.releases.map((r: { count: number }) => Object.values(r).slice(0, 2)),
      [["1.2", 1], ["1.1", 2], ["1.0", 2]],
    );
    assert.equal(out.latest.data.title, "Payment 6 failed");

    const text = await cli(h.kv, ["errors", project.id, fp], {
      clock: h.clock,
    });
    assert.equal(text.code, 0);
    assert.match(text.stdout, /Users {7}3/);
    assert.match(
      text.stdout,
      /at pay \(https:\/\/shop\.example\/app\.js:3:9\)/,
    );

    const list = await cli(h.kv, ["errors", project.id, "--json"], {
      clock: h.clock,
    });
    const groups = list.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(groups.find((g) => g.fingerprint === fp).users, 3);
    assert.equal(groups.find((g) => g.title === "Disk full").users, 1);

    const bad = await cli(h.kv, ["errors", project.id, "nope"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /Cannot read fingerprint "nope"/);
    const unknown = await cli(h.kv, ["errors", project.id, "0".repeat(16)]);
    assert.equal(unknown.code, 1);
  },
);

dashboardTest(
  "a viewer opens an error group's page; a bad fingerprint answers 400, an unknown one 404",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    const fp = await seed(h, project.id);
    await addAccount(h.kv, "viewer@example.com", "viewer", [project.id]);
    const viewer = await signInAs(h.dash, "viewer@example.com");
    const res = await viewer.get(`/projects/${project.id}/errors/${fp}`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /id="group-count">5</);
    const bad = await viewer.get(`/projects/${project.id}/errors/nope`);
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).error, /Cannot read fingerprint/);
    const unknown = await viewer.get(
      `/projects/${project.id}/errors/${"0".repeat(16)}`,
    );
    assert.equal(unknown.status, 404);
  },
);
