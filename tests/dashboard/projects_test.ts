/**
 * The dashboard's projects and settings routes, through `app.request` on an
 * in-memory KV: what each form stores, what it answers, and the reason shown
 * when a value is refused.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAudit } from "../../db/audit.ts";
import { entriesLastDay, recentCount } from "../../dashboard/data.ts";
import { getProject, listProjects } from "../../db/projects.ts";
import { RECENT_REJECTIONS } from "../../db/stats.ts";
import { deadLetterKey, pendingBatchKey } from "../../db/keys.ts";
import {
  deadLetter,
  ORIGIN,
  postEntries,
  randomEntry,
} from "../_helpers/harness.ts";
import {
  type Browser,
  dashboardProjectTest,
  signedInProjectTest,
  signedInTest,
  signIn,
  store,
  textOf,
  withSignedIn,
} from "../_helpers/dashboard.ts";

async function created(browser: Browser, name = "Web shop") {
  const res = await browser.post("/projects", {
    name,
    allow: "https://shop.example.com\ncom.example.shop.ios",
  });
  // Redirected, so that a reload creates nothing; the list shows the secret.
  assert.equal(res.status, 303);
  assert.equal(res.headers.get("location"), "/");
  const html = await (await browser.get("/")).text();
  const id = /id="created-id">([^<]+)</.exec(html)![1]!;
  const secret = /id="created-secret" class="secret">([^<]+)</.exec(html)![1]!;
  return { id, secret, html };
}

signedInTest(
  "creating a project stores it and shows its secret once",
  async (h, browser) => {
    const { id, secret } = await created(browser);
    const stored = await getProject(h.kv, id);
    assert.equal(stored?.name, "Web shop");
    assert.equal(stored?.secret, secret);
    assert.deepEqual(stored?.settings.allowedOrigin, [
      "https://shop.example.com",
      "com.example.shop.ios",
    ]);
    const list = await (await browser.get("/")).text();
    assert.ok(list.includes(id));
    assert.ok(!list.includes(secret), "the list never shows a secret");
  },
);

signedInTest(
  "a project with a refused allow-list value is not created and the reason is shown",
  async (h, browser) => {
    const res = await browser.post("/projects", {
      name: "Shop",
      allow: "https://shop.example.com/",
    });
    assert.equal(res.status, 400);
    const html = await res.text();
    const text = textOf(html);
    assert.match(
      text,
      /Cannot allow "https:\/\/shop\.example\.com\/": expected an origin/,
    );
    assert.match(
      html,
      /<input name="name" required maxlength="200" value="Shop">/,
    );
    assert.match(
      html,
      /<textarea name="allow"[^>]*>https:\/\/shop\.example\.com\/<\/textarea>/,
    );
    assert.deepEqual(await listProjects(h.kv), []);
  },
);

dashboardProjectTest(
  "the projects page shows the last 24 h, all-time counters and the last entry's time",
  async (h, project) => {
    const send = async (origin: string, projectId = project.id) =>
      await postEntries(h, projectId, { origin });
    // A day and a half ago: stored and rejected, out of the last 24 h.
    await send("https://app.example.com");
    await send("https://evil.example");
    await h.process();
    h.clock.advance(36 * 3_600_000);
    await send("https://app.example.com");
    await send("https://app.example.com");
    await send("https://evil.example");
    await send("https://app.example.com", "nobody");
    await h.process();
    h.clock.advance(90_000);
    const browser = await signIn(h.dash);
    const text = textOf(await (await browser.get("/")).text());
    assert.match(
      text,
      /Entries, 24 h Rejected, 24 h Last entry All time: stored \/ rejected/,
    );
    assert.match(text, new RegExp(`${project.id} 2 1 1 min ago 3 / 2 `));
    assert.match(text, /1 entries named a project id that does not exist/);
  },
);

Deno.test("rejections of the last 24 h are a lower bound when every kept one is that recent", () => {
  const now = Date.UTC(2026, 0, 15);
  const at = (hoursAgo: number) => ({
    entryId: `e${hoursAgo}`,
    at: now - hoursAgo * 3_600_000,
    reason: "bad_origin" as const,
    level: "info",
  });
  assert.deepEqual(recentCount([at(1), at(23.9), at(25)], now), {
    count: 2,
    atLeast: false,
  });
  const full = Array.from({ length: RECENT_REJECTIONS }, (_, i) => at(i / 10));
  assert.deepEqual(recentCount(full, now), {
    count: RECENT_REJECTIONS,
    atLeast: true,
  });
  assert.deepEqual(recentCount([...full.slice(1), at(30)], now), {
    count: RECENT_REJECTIONS - 1,
    atLeast: false,
  });
});

dashboardProjectTest(
  "entries of the last 24 h are counted exactly, to the millisecond",
  async (h, project) => {
    const start = h.clock.now();
    // One entry every 7 minutes and 13.5 s for 30 hours: partial minutes
    // and hours at both ends of the day.
    const step = 7 * 60_000 + 13_500;
    const bodies = Array.from(
      { length: Math.floor(30 * 3_600_000 / step) },
      () => ({}),
    );
    const stored = await store(h, project.id, bodies, step);
    for (const now of [h.clock.now(), start + 26 * 3_600_000 + 12_345]) {
      const wanted = stored.filter((r) =>
        r.receivedAt >= now - 86_400_000 && r.receivedAt <= now
      ).length;
      assert.ok(wanted > 150 && wanted < stored.length);
      assert.equal(await entriesLastDay(h.kv, project.id, now), wanted);
    }
  },
);

Deno.test("the allow-list is edited as the CLI does, with the reason for a refusal", async (t) => {
  await withSignedIn(async (h, browser) => {
    const { id } = await created(browser);
    const path = `/projects/${id}/settings`;
    await t.step("a wildcard is refused with the CLI's message", async () => {
      const res = await browser.post(`${path}/allow`, {
        value: "https://*.example.com",
      });
      assert.equal(res.status, 400);
      const html = await res.text();
      assert.match(
        textOf(html),
        /Cannot allow "https:\/\/\*\.example\.com": wildcards are not supported/,
      );
      assert.match(html, /aria-invalid="true"/);
      assert.match(
        html,
        /value="https:\/\/\*\.example\.com"/,
        "the value is kept in the form",
      );
    });
    await t.step("a valid origin is added", async () => {
      const res = await browser.post(`${path}/allow`, {
        value: " https://new.example.com ",
      });
      assert.equal(res.status, 303);
      assert.equal(res.headers.get("location"), `${path}?done=allow#allow`);
      const page = textOf(
        await (await browser.get(`${path}?done=allow`)).text(),
      );
      assert.match(page, /Added to the allow-list\./);
      assert.deepEqual((await getProject(h.kv, id))?.settings.allowedOrigin, [
        "https://shop.example.com",
        "com.example.shop.ios",
        "https://new.example.com",
      ]);
    });
    await t.step("one is removed; removing it again is refused", async () => {
      assert.equal(
        (await browser.post(`${path}/disallow`, {
          value: "com.example.shop.ios",
        })).status,
        303,
      );
      const again = await browser.post(`${path}/disallow`, {
        value: "com.example.shop.ios",
      });
      assert.equal(again.status, 400);
      assert.match(textOf(await again.text()), /it is not in the allow-list/);
      assert.deepEqual((await getProject(h.kv, id))?.settings.allowedOrigin, [
        "https://shop.example.com",
        "https://new.example.com",
      ]);
    });
    await t.step(
      "the rejections page's quick allow returns there",
      async () => {
        const res = await browser.post(`${path}/allow`, {
          value: "https://shop.example.net",
          back: "rejections",
        });
        assert.equal(
          res.headers.get("location"),
          `/projects/${id}/rejections?done=allow`,
        );
      },
    );
  });
});

signedInTest(
  "custom levels and retention are set, with refusals explained",
  async (h, browser) => {
    const { id } = await created(browser);
    const path = `/projects/${id}/settings`;
    assert.equal(
      (await browser.post(`${path}/levels/add`, { level: "audit" }))
        .status,
      303,
    );
    const bad = await browser.post(`${path}/levels/add`, {
      level: "Audit Log",
    });
    assert.equal(bad.status, 400);
    const badHtml = await bad.text();
    assert.match(
      textOf(badHtml),
      /Cannot use level "Audit Log": expected a lower-case name/,
    );
    // The refused value is kept in the field, which is marked invalid.
    assert.match(
      badHtml,
      /<input name="level"[^>]*value="Audit Log"[^>]*aria-invalid="true"/,
    );
    const standard = await browser.post(`${path}/levels/add`, {
      level: "error",
    });
    assert.match(textOf(await standard.text()), /it is a standard level/);
    assert.deepEqual((await getProject(h.kv, id))?.levels, ["audit"]);
    assert.equal(
      (await browser.post(`${path}/levels/remove`, { level: "audit" }))
        .status,
      303,
    );
    assert.deepEqual((await getProject(h.kv, id))?.levels, []);

    assert.equal(
      (await browser.post(`${path}/retention`, { days: "90" })).status,
      303,
    );
    assert.equal((await getProject(h.kv, id))?.retentionDays, 90);
    for (const days of ["0", "4000", "1.5", "soon"]) {
      const res = await browser.post(`${path}/retention`, { days });
      assert.equal(res.status, 400, days);
      assert.match(
        textOf(await res.text()),
        /Cannot keep entries for ".*" days/,
      );
    }
    assert.equal((await getProject(h.kv, id))?.retentionDays, 90);
  },
);

signedInTest(
  "rotating the secret shows the new one once and keeps the old for the grace period",
  async (h, browser) => {
    const { id, secret } = await created(browser);
    const res = await browser.post(`/projects/${id}/settings/rotate`, {
      grace: "3600000",
    });
    assert.equal(res.status, 303);
    assert.equal(
      res.headers.get("location"),
      `/projects/${id}/settings?done=rotate#secret`,
    );
    const html =
      await (await browser.get(`/projects/${id}/settings?done=rotate`))
        .text();
    assert.match(textOf(html), /Secret rotated\./);
    const shown = /id="new-secret" class="secret">([^<]+)</.exec(html)?.[1];
    const stored = await getProject(h.kv, id);
    assert.equal(shown, stored?.secret);
    assert.notEqual(shown, secret);
    assert.equal(stored?.previousSecret, secret);
    assert.equal(stored?.previousSecretExpiresAt, h.clock.now() + 3_600_000);
    assert.match(
      textOf(html),
      /The previous secret still verifies until .* \(1 h left\)/,
    );
    const later = await (await browser.get(`/projects/${id}/settings`))
      .text();
    assert.ok(!later.includes(shown!), "shown only once");
    const odd = await browser.post(`/projects/${id}/settings/rotate`, {
      grace: "5",
    });
    assert.equal(odd.status, 400);
    assert.equal((await getProject(h.kv, id))?.secret, shown);
  },
);

signedInTest(
  "deleting a project needs its name typed exactly",
  async (h, browser) => {
    const { id } = await created(browser);
    const wrong = await browser.post(`/projects/${id}/settings/delete`, {
      confirm: "web shop",
    });
    assert.equal(wrong.status, 400);
    assert.match(
      textOf(await wrong.text()),
      /type the project's name "Web shop" exactly/,
    );
    assert.notEqual(await getProject(h.kv, id), null);
    const right = await browser.post(`/projects/${id}/settings/delete`, {
      confirm: "Web shop",
    });
    assert.equal(right.status, 303);
    assert.equal(right.headers.get("location"), "/?done=deleted");
    assert.equal(await getProject(h.kv, id), null);
    assert.equal(
      (await browser.get(`/projects/${id}/settings`)).status,
      404,
    );
    const again = await browser.post(`/projects/${id}/settings/allow`, {
      value: "https://a.example",
    });
    assert.equal(again.status, 404);
  },
);

Deno.test("the settings page gives snippets with the project's id and the service's endpoint", async () => {
  await withSignedIn(async (_h, browser) => {
    const { id, secret } = await created(browser);
    const html = await (await browser.get(`/projects/${id}/settings`))
      .text();
    const text = textOf(html);
    assert.match(text, new RegExp(`curl -sS 'http://localhost/api/v1/logs'`));
    assert.match(text, new RegExp(`-H 'Origin: https://shop.example.com'`));
    assert.match(text, new RegExp(`projectId: "${id}"`));
    assert.match(text, new RegExp(`PROJECT_ID='${id}'`));
    assert.match(text, /openssl dgst -sha256 -hmac "\$SECRET"/);
    assert.ok(!html.includes(secret), "no secret in the snippets");
  }, { dashboard: { endpoint: () => "http://localhost/api/v1/logs" } });
});

signedInTest(
  "the rejections page shows counts, recent rejections and what to do",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    await postEntries(h, project.id, { origin: "https://shop.example.net" });
    await h.post(randomEntry({ projectId: project.id, level: "verbose" }), {
      Origin: "https://app.example.com",
    });
    await postEntries(h, project.id, { origin: ORIGIN });
    await h.process();
    const html = await (await browser.get(`/projects/${project.id}/rejections`))
      .text();
    const text = textOf(html);
    assert.match(text, /Stored 1 Rejected 2 2/);
    assert.match(
      text,
      /bad_origin 1 1 The Origin header is not in the allow-list\./,
    );
    assert.match(text, /unknown_level 1 1/);
    assert.match(html, /<tr data-reason="bad_origin">/);
    assert.match(text, /bad_origin info https:\/\/shop\.example\.net Allow/);
    assert.match(text, /Rejected entries .* Replay all 2 kept entries/);
  },
);

signedInTest("dead letters are listed and replayed", async (h, browser) => {
  const empty = textOf(
    await (await browser.get("/dead-letters")).text(),
  );
  assert.match(empty, /No dead letters/);
  const project = await h.project();
  const batchId = await deadLetter(
    h,
    randomEntry({ projectId: project.id }),
    "disk <full>",
  );
  const html = await (await browser.get("/dead-letters")).text();
  assert.ok(html.includes(batchId));
  assert.match(html, /disk &lt;full&gt;/);
  const res = await browser.post("/dead-letters/replay", {
    id: batchId,
  });
  assert.equal(res.status, 303);
  assert.equal(
    res.headers.get("location"),
    "/dead-letters?done=replayed&n=1",
  );
  assert.equal((await h.kv.get(deadLetterKey(batchId))).value, null);
  assert.notEqual((await h.kv.get(pendingBatchKey(batchId))).value, null);
  const missing = await browser.post("/dead-letters/replay", {
    id: batchId,
  });
  assert.equal(missing.status, 404);
  assert.match(textOf(await missing.text()), /Cannot find dead letter/);
  const all = await browser.post("/dead-letters/replay", {
    id: "all",
  });
  assert.equal(
    all.headers.get("location"),
    "/dead-letters?done=replayed&n=0",
  );
  // The one replay is in the service's audit log, by the account.
  const events = (await listAudit(h.kv, null)).filter((e) =>
    e.action.startsWith("deadletter.")
  );
  assert.deepEqual(
    events.map((e) => [e.actor, e.action, e.detail]),
    [["admin", "deadletter.replay", `1: ${batchId}`]],
  );
});

signedInTest(
  "replay all goes on past a dead letter whose batch id is pending, and the page names it",
  async (h, browser) => {
    const project = await h.project();
    const held = await deadLetter(h, randomEntry({ projectId: project.id }));
    const other = await deadLetter(h, randomEntry({ projectId: project.id }));
    const dead = (await h.kv.get(deadLetterKey(held))).value as Uint8Array;
    await h.kv.set(pendingBatchKey(held), dead);
    const res = await browser.post("/dead-letters/replay", { id: "all" });
    assert.equal(res.status, 409);
    assert.match(
      textOf(await res.text()),
      new RegExp(`Replayed 1; cannot replay 1: .*pending \\(${held}\\)`),
    );
    assert.notEqual((await h.kv.get(pendingBatchKey(other))).value, null);
  },
);

signedInTest(
  "a dead letter deleted from the page is gone with its slices; one deleted already is not found",
  async (h, browser) => {
    const project = await h.project();
    const batchId = await deadLetter(
      h,
      randomEntry({ projectId: project.id }),
      "disk full",
    );
    const html = await (await browser.get("/dead-letters")).text();
    assert.match(html, /action="\/dead-letters\/delete"/);
    const res = await browser.post("/dead-letters/delete", { id: batchId });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/dead-letters?done=deleted");
    const left: string[] = [];
    for await (const entry of h.kv.list({ prefix: [] })) {
      if (entry.key.includes(batchId)) left.push(JSON.stringify(entry.key));
    }
    assert.deepEqual(left, []);
    const again = await browser.post("/dead-letters/delete", { id: batchId });
    assert.equal(again.status, 404);
    assert.match(textOf(await again.text()), /Cannot find dead letter/);
    const all = await browser.post("/dead-letters/delete", { id: "all" });
    assert.equal(all.status, 404, "all names no batch here");
    await all.text();
  },
);

signedInProjectTest(
  "a done code after a redirect shows its notice on the page that takes it, an unknown one none",
  async (_h, browser, project) => {
    const pages: [string, RegExp][] = [
      ["/?done=deleted", /Project deleted\./],
      ["/users?done=added", /User added\./],
      ["/dead-letters?done=replayed&n=2", /Replayed 2 batch\(es\)/],
      ["/dead-letters?done=deleted", /Dead letter deleted/],
      [`/projects/${project.id}/rejections?done=allow`, /Added to the allow/],
      [`/projects/${project.id}/settings?done=retention`, /Retention saved\./],
      [`/projects/${project.id}/alerts?done=removed`, /Alert rule removed\./],
    ];
    for (const [path, notice] of pages) {
      const html = await (await browser.get(path)).text();
      assert.match(html, /class="notice ok"/, path);
      const unknown = path.replace(/done=\w+/, "done=nothing");
      const none = await (await browser.get(unknown)).text();
      assert.doesNotMatch(none, /class="notice ok"/, unknown);
      assert.match(textOf(html), notice, path);
    }
  },
);
