/**
 * The errors page through `app.request`: groups with counts, times, a
 * sparkline and the "new" mark, sender text inert, and the link to the
 * explorer listing exactly one group's entries; the newest group first
 * however many a sender made.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  addErrorGroups,
  MAX_GROUPS,
  MAX_GROUPS_PER_BATCH,
  prepareErrorGroups,
} from "../../db/error_groups.ts";
import { MAX_LIST_GROUPS } from "../../db/error_group_reads.ts";
import { errorGroupKey } from "../../db/keys.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { fingerprintOf } from "../../domain/fingerprint.ts";
import { createId } from "../../domain/ids.ts";
import { cli } from "../_helpers/cli.ts";
import {
  dashboardTest,
  type DashHarness,
  rowIds,
  signIn,
  store,
  textOf,
} from "../_helpers/dashboard.ts";

const HOUR = 3_600_000;
const HOSTILE = `<script>alert(1)</script>`;

/**
 * Writes `made` groups of one critical entry each as the consumer does,
 * from the clock's time on, a millisecond apart: "Ground q", "Ground r", ….
 */
async function seedGroups(h: DashHarness, projectId: string, made: number) {
  const t0 = h.clock.now();
  for (let i = 0; i < made; i += MAX_GROUPS_PER_BATCH) {
    const batch: LogRecord[] = [];
    for (let j = i; j < Math.min(made, i + MAX_GROUPS_PER_BATCH); j++) {
      const word = j.toString(26).replace(/\d/g, (d) => "qrstuvwxyz"[+d]!);
      batch.push({
        id: createId(t0 + j),
        receivedAt: t0 + j,
        level: "critical",
        data: { title: `Ground ${word}` },
        device: {},
        context: {},
        auth: "origin",
      });
    }
    const op = h.kv.atomic();
    addErrorGroups(
      op,
      await prepareErrorGroups(h.kv, projectId, batch, {
        now: t0,
        retentionMs: 30 * 24 * HOUR,
      }),
    );
    assert.ok((await op.commit()).ok);
  }
}

dashboardTest(
  "the errors page lists groups with count, sparkline, new mark and a link to their entries",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    const stored = await store(h, project.id, [
      { level: "error", data: { title: "Order 1 failed" } },
      { level: "error", data: { title: "Order 2 failed" } },
      { level: "info", data: { title: "Order 3 failed" } },
      {
        level: "critical",
        data: {
          message: `Cannot read ${HOSTILE}`,
          stack:
            "TypeError: x\n    at pay (https://shop.example.com/app.js:3:9)",
        },
      },
    ]);
    h.clock.advance(HOUR);
    const browser = await signIn(h.dash);
    const res = await browser.get(`/projects/${project.id}/errors`);
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.doesNotMatch(html, /<script>alert/);
    const text = textOf(html);
    assert.match(text, /2 groups, 2 new in the last 24 hours/);
    assert.match(text, /error new Order <n> failed .*? 2 /);
    assert.match(text, /https:\/\/shop\.example\.com\/app\.js:pay/);
    assert.match(text, /Cannot read "…"|Cannot read <script>/);
    // The sparklines: 24 hourly bars each, their entries an hour ago.
    const sparks = [...html.matchAll(/data-hourly="([\d,]+)"/g)].map((m) =>
      m[1]!.split(",").map(Number)
    );
    assert.equal(sparks.length, 2);
    assert.deepEqual(sparks.map((s) => s.length), [24, 24]);
    assert.deepEqual(sparks.map((s) => s[22]).sort(), [1, 2]);
    assert.deepEqual(sparks.map((s) => s.reduce((a, b) => a + b)).sort(), [
      1,
      2,
    ]);
    // The link to the explorer shows that group's entries only.
    const href = /class="group-link strong" href="([^"]+)"[^>]*>Order/.exec(
      html,
    )![1]!.replaceAll("&amp;", "&");
    assert.match(decodeURIComponent(href), /fingerprint:[0-9a-f]{16}/);
    const explorer = await (await browser.get(href)).text();
    assert.deepEqual(
      rowIds(explorer).sort(),
      [stored[0]!.id, stored[1]!.id].sort(),
    );
  },
);

dashboardTest(
  "the errors page says so when there are none, and an unknown project answers 404",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    await store(h, project.id, [{ level: "warning", data: { title: "Slow" } }]);
    const browser = await signIn(h.dash);
    const res = await browser.get(`/projects/${project.id}/errors`);
    assert.match(textOf(await res.text()), /No errors yet/);
    const missing = await browser.get(`/projects/nope/errors`);
    assert.equal(missing.status, 404);
    await missing.body?.cancel();
  },
);

dashboardTest(
  "a group first seen more than a day ago is not marked new",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    await store(h, project.id, [{ level: "error", data: { title: "Old" } }]);
    h.clock.advance(25 * HOUR);
    await store(h, project.id, [{ level: "error", data: { title: "Fresh" } }]);
    const browser = await signIn(h.dash);
    const html = await (await browser.get(`/projects/${project.id}/errors`))
      .text();
    assert.match(textOf(html), /2 groups, 1 new/);
    assert.match(textOf(html), /error new Fresh/);
    assert.doesNotMatch(textOf(html), /new Old/);
  },
);

dashboardTest(
  "10,000 groups a sender made leave a new error first on the errors page and in `deno task errors`, the project's groups bounded",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    const made = MAX_GROUPS + 100;
    await seedGroups(h, project.id, made);
    h.clock.advance(made + 1_000);
    await store(h, project.id, [
      { level: "error", data: { title: "Payment provider unreachable" } },
    ]);
    const groupRows = await Array.fromAsync(
      h.kv.list({ prefix: errorGroupKey(project.id) }),
    );
    assert.equal(groupRows.length, MAX_GROUPS);

    const browser = await signIn(h.dash);
    const res = await browser.get(`/projects/${project.id}/errors`);
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.ok(html.length < 300_000, `page of ${html.length} bytes`);
    const titles = [
      ...textOf(html).matchAll(/(Payment provider unreachable|Ground [a-z]+)/g),
    ]
      .map((m) => m[1]);
    assert.equal(titles[0], "Payment provider unreachable");
    assert.match(textOf(html), /The most recently seen 100 groups/);
    const older = /id="older-groups" href="([^"]+)"/.exec(html)![1]!
      .replaceAll("&amp;", "&");
    const next = await browser.get(older);
    assert.equal(next.status, 200);
    assert.doesNotMatch(await next.text(), /Payment provider/);
    const bad = await browser.get(`/projects/${project.id}/errors?after=nope`);
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).error, /Cannot read cursor/);

    const run = await cli(h.kv, [
      "errors",
      project.id,
      "--json",
      "--limit",
      "2",
    ]);
    assert.equal(run.code, 0);
    const [first] = run.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(first.title, "Payment provider unreachable");
  },
);

dashboardTest(
  "a status filter matching none of the 1,000 most recently seen groups links to those seen earlier, on the page and in `deno task errors`",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    await store(h, project.id, [
      { level: "error", data: { title: "Oldest failure" } },
    ]);
    const fp = fingerprintOf({ data: { title: "Oldest failure" } }).fingerprint;
    const run = (args: string[]) => cli(h.kv, args, { clock: h.clock });
    assert.equal((await run(["errors", "resolve", project.id, fp])).code, 0);
    h.clock.advance(1_000);
    await seedGroups(h, project.id, MAX_LIST_GROUPS + 20);
    h.clock.advance(MAX_LIST_GROUPS + 1_000);

    const browser = await signIn(h.dash);
    const page = await (await browser.get(
      `/projects/${project.id}/errors?status=resolved`,
    )).text();
    assert.doesNotMatch(textOf(page), /No errors yet/);
    assert.match(
      textOf(page),
      /None among the 1,000 most recently seen groups\./,
    );
    const older = /id="older-groups" href="([^"]+)"/.exec(page)?.[1]
      ?.replaceAll("&amp;", "&");
    assert.ok(older, "a link to the groups seen earlier");
    assert.match(older, /status=resolved/);
    const next = await browser.get(older);
    assert.equal(next.status, 200);
    assert.match(
      textOf(await next.text()),
      /1 group seen earlier\b.*Oldest failure/,
    );

    const text = await run(["errors", project.id, "--status", "resolved"]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      /^None among the 1,000 most recently seen groups of project "test"\n/,
    );
    const after = /deno task errors PROJECT --after (\S+)\n$/.exec(
      text.stdout,
    )?.[1];
    assert.ok(after, text.stdout);
    const json = await run([
      "errors",
      project.id,
      "--status",
      "resolved",
      "--json",
    ]);
    assert.equal(json.stdout, "");
    assert.match(
      json.stderr,
      new RegExp(`--after ${after.replaceAll(".", "\\.")}`),
    );
    const found = await run([
      "errors",
      project.id,
      "--status",
      "resolved",
      "--after",
      after,
      "--json",
    ]);
    assert.equal(found.code, 0, found.stderr);
    assert.deepEqual(
      found.stdout.trim().split("\n").map((l) => JSON.parse(l).fingerprint),
      [fp],
    );
  },
);
