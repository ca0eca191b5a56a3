/**
 * Accounts through `deno task user` and the dashboard: the password read
 * from standard input and stored only as a scrypt hash, signing in by
 * email, a new password or removal ending the account's sessions, and
 * signing out, expiry, removal or the project's deletion ending a live tail
 * within seconds; the audit log's bound.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  listAudit,
  MAX_EVENTS_PER_ACTOR_DAY,
  recordAudit,
} from "../../db/audit.ts";
import { deleteProject } from "../../db/deletion.ts";
import { userKey } from "../../db/keys.ts";
import { decodeJson } from "../../db/kv.ts";
import { createProject } from "../../db/projects.ts";
import { hashPassword, verifyPassword } from "../../db/passwords.ts";
import type { User } from "../../db/users.ts";
import { cli } from "../_helpers/cli.ts";
import {
  EVENT_TIMEOUT_MS,
  everything,
  textDecoder,
  withTimeout,
} from "../_helpers/harness.ts";
import {
  ACCOUNT_PASSWORD,
  signInAs,
  signInNew,
  submitAs,
} from "../_helpers/dashboard_accounts.ts";
import {
  dashboardTest,
  get,
  signedInTest,
  signIn,
  textOf,
  withSignedIn,
} from "../_helpers/dashboard.ts";
import { kvWith } from "../_helpers/kv_with.ts";
import { peakRss } from "../_helpers/memory.ts";

const stdin = (line: string | null) => () => Promise.resolve(line);

/** Resolves `true` when the stream ends within `ms`, `false` otherwise. */
async function endsWithin(res: Response, ms: number): Promise<boolean> {
  const reader = res.body!.pipeThrough(textDecoder()).getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const ended = (async () => {
    for (;;) if ((await reader.read()).done) return true as const;
  })();
  const result = await Promise.race([ended, timeout]);
  clearTimeout(timer);
  if (!result) {
    await reader.cancel();
    await ended;
  }
  return result;
}

/** Waits until the tail answered its first poll (so that it is live). */
async function tailOpen(
  app: Parameters<typeof get>[0],
  browser: Parameters<typeof get>[1],
  projectId: string,
): Promise<Response> {
  const res = await get(app, browser, `/projects/${projectId}/tail`);
  assert.equal(res.status, 200);
  return res;
}

dashboardTest(
  "user add stores only a scrypt hash of the password read from stdin, and the account signs in by email",
  async (h) => {
    const project = await createProject(h.kv, { name: "web" });
    const password = "a fairly long passphrase";
    const run = await cli(h.kv, [
      "user",
      "add",
      "Ana@Example.com",
      "--role",
      "viewer",
      "--project",
      project.id,
      "--password-stdin",
      "--json",
    ], { readLine: stdin(password) });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(
      { ...JSON.parse(run.stdout), createdAt: 0, updatedAt: 0 },
      {
        email: "ana@example.com",
        role: "viewer",
        projects: [project.id],
        createdAt: 0,
        updatedAt: 0,
      },
    );
    const stored = decodeJson<User>(
      (await h.kv.get(userKey("ana@example.com"))).value,
    )!;
    assert.match(
      stored.passwordHash,
      /^scrypt\$32768\$8\$3\$[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=$/,
    );
    assert.ok(!(await everything(h.kv)).includes(password));

    const list = await cli(h.kv, ["user", "list", "--json"]);
    assert.equal(list.code, 0);
    assert.doesNotMatch(list.stdout, /scrypt|stamp/);
    assert.equal(JSON.parse(list.stdout)[0].email, "ana@example.com");

    const wrong = await submitAs(h.dash, "ana@example.com", "not the password");
    assert.equal(wrong.status, 401);
    await wrong.body?.cancel();
    const right = await submitAs(h.dash, "ANA@example.com", password);
    assert.equal(right.status, 303);
  },
);

dashboardTest(
  "user add refuses a missing password, an unknown role or project and a taken email",
  async (h) => {
    const project = await createProject(h.kv, { name: "web" });
    // In order: the arguments, the line on standard input, the exit code and
    // what standard error says. The last but one adds the account whose
    // email the last one finds taken.
    const viewer = "a@example.com --role viewer --password-stdin";
    const calls: [string, string | null, number, RegExp?][] = [
      ["a@example.com --role viewer", ACCOUNT_PASSWORD, 2, /--password-stdin/],
      [viewer, null, 2],
      [viewer, "short", 1, /8 to 1024 characters/],
      [
        "a@example.com --role owner --password-stdin",
        ACCOUNT_PASSWORD,
        2,
        /^Cannot read --role "owner": expected admin, member or viewer/,
      ],
      [
        "a@example.com --role viewer --project nope --password-stdin",
        ACCOUNT_PASSWORD,
        1,
        /Cannot find project "nope"/,
      ],
      ["admin --role admin --password-stdin", ACCOUNT_PASSWORD, 1],
      [
        `a@example.com --role member --project ${project.id} --password-stdin`,
        ACCOUNT_PASSWORD,
        0,
      ],
      [
        "A@example.com --role viewer --password-stdin",
        ACCOUNT_PASSWORD,
        1,
        /a user with this email exists/,
      ],
    ];
    for (const [args, line, code, message] of calls) {
      const run = await cli(h.kv, ["user", "add", ...args.split(" ")], {
        readLine: stdin(line),
      });
      assert.equal(run.code, code, `user add ${args}: ${run.stderr}`);
      if (message) assert.match(run.stderr, message);
    }
  },
);

dashboardTest(
  "user passwd ends the account's sessions; the new password signs in",
  async (h) => {
    const browser = await signInNew(h, "ana@example.com", "admin");
    assert.equal((await browser.get("/users")).status, 200);
    const run = await cli(
      h.kv,
      ["user", "passwd", "ana@example.com", "--password-stdin"],
      { readLine: stdin("another long password") },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal((await browser.get("/users")).status, 303);
    await signInAs(h.dash, "ana@example.com", "another long password");
  },
);

dashboardTest(
  "user remove ends the account's sessions and its live tail within seconds",
  async (h) => {
    const project = await createProject(h.kv, { name: "web" });
    const browser = await signInNew(h, "ana@example.com", "viewer", [
      project.id,
    ]);
    const tail = await tailOpen(h.dash, browser, project.id);
    const run = await cli(h.kv, ["user", "remove", "ana@example.com"]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /sessions and live tails have ended/);
    assert.equal(await endsWithin(tail, 2000), true, "the tail ended");
    const home = await browser.get("/");
    assert.equal(home.status, 303);
    const audit = await listAudit(h.kv, project.id);
    assert.deepEqual(
      audit.map((e) => [e.actor, e.action, e.detail]),
      [["cli", "user.remove", "ana@example.com"]],
    );
  },
);

dashboardTest(
  "user set changes the role or projects given, --no-projects leaves none, and nothing to change is refused unaudited",
  async (h) => {
    const project = await createProject(h.kv, { name: "web" });
    const added = await cli(h.kv, [
      "user",
      "add",
      "ana@example.com",
      "--role",
      "viewer",
      "--project",
      project.id,
      "--password-stdin",
    ], { readLine: stdin("a fairly long passphrase") });
    assert.equal(added.code, 0, added.stderr);
    const set = (...args: string[]) =>
      cli(h.kv, ["user", "set", "ana@example.com", ...args]);
    for (const args of [[], ["--no-projects", "--project", project.id]]) {
      const refused = await set(...args);
      assert.equal(refused.code, 2, args.join(" "));
      assert.match(refused.stderr, /^Cannot (run|use)/);
    }
    const cleared = await set("--no-projects", "--json");
    assert.equal(cleared.code, 0, cleared.stderr);
    assert.deepEqual(JSON.parse(cleared.stdout).projects, []);
    const member = await set("--role", "member", "--json");
    assert.deepEqual(
      [JSON.parse(member.stdout).role, JSON.parse(member.stdout).projects],
      ["member", []],
    );
    const updates = (await listAudit(h.kv, project.id)).filter((e) =>
      e.action === "user.update"
    );
    assert.equal(updates.length, 1, "only the change of its projects");
  },
);

Deno.test("a live tail that stays open keeps streaming while its session lives", async () => {
  // A heartbeat after every poll: each one shows the stream is polled on.
  await withSignedIn(async (h, browser) => {
    const project = await createProject(h.kv, { name: "web" });
    const tail = await tailOpen(h.dash, browser, project.id);
    const reader = tail.body!.pipeThrough(textDecoder()).getReader();
    let text = "";
    try {
      await withTimeout(
        (async () => {
          while ((text.match(/: keep-alive/g) ?? []).length < 3) {
            const { done, value } = await reader.read();
            assert.equal(done, false, `the stream ended after: ${text}`);
            text += value;
          }
        })(),
        EVENT_TIMEOUT_MS,
        "three polls of the tail",
      );
    } finally {
      await reader.cancel();
    }
  }, {
    dashboard: { tail: { intervalMs: 5, maxMs: 60_000, heartbeatMs: 0 } },
  });
});

signedInTest(
  "signing out ends the session's live tail within seconds",
  async (h, browser) => {
    const project = await createProject(h.kv, { name: "web" });
    const tail = await tailOpen(h.dash, browser, project.id);
    const out = await browser.post("/logout", {});
    assert.equal(out.status, 303);
    assert.equal(await endsWithin(tail, 2000), true);
  },
);

Deno.test("a session's expiry ends its live tail", async () => {
  // Sessions of 30 s, tails of 60 s: the session ends first.
  await withSignedIn(async (h, browser) => {
    const project = await createProject(h.kv, { name: "web" });
    const tail = await tailOpen(h.dash, browser, project.id);
    h.clock.advance(30_001);
    assert.equal(await endsWithin(tail, 2000), true);
  }, { dashboard: { sessionTtlMs: 30_000 } });
});

signedInTest(
  "deleting the project ends its live tail within seconds, though the deletion was cut short",
  async (h, browser) => {
    const project = await createProject(h.kv, { name: "web" });
    const tail = await tailOpen(h.dash, browser, project.id);
    // Cut short right after the record's commit: the data is still there.
    const cut = kvWith(h.kv, {
      list: () => {
        throw new Error("interrupted");
      },
    });
    await assert.rejects(deleteProject(cut, project.id), /interrupted/);
    assert.equal(await endsWithin(tail, 2000), true);
  },
);

dashboardTest(
  "an account's flood of changes cannot push an older event out of the audit log: past its daily budget they are folded",
  async (h) => {
    const project = await createProject(h.kv, { name: "web" });
    const record = (actor: string, action: string, detail: string) =>
      recordAudit(h.kv, {
        projectId: project.id,
        actor,
        action,
        detail,
        now: h.clock.now,
      });
    await record("ana@example.com", "token.create", "ci");
    h.clock.advance(1);
    // 270 allow/disallow pairs a day, three days running.
    for (let day = 0; day < 3; day++) {
      for (let i = 0; i < 270; i++) {
        await record("mallory@example.com", "settings.allow", `a${i}`);
        await record("mallory@example.com", "settings.disallow", `a${i}`);
        h.clock.advance(1);
      }
      h.clock.advance(86_400_000);
    }
    await record("mallory@example.com", "token.create", "mine");
    const all = [];
    let before: string | undefined;
    for (;;) {
      const page = await listAudit(h.kv, project.id, 500, before);
      all.push(...page);
      if (page.length < 500) break;
      before = page.at(-1)!.id;
    }
    assert.equal(all.at(-1)!.action, "token.create", "the oldest is kept");
    assert.equal(all.at(-1)!.actor, "ana@example.com");
    // Each day: 200 events in full, then one folded event per action.
    assert.equal(all.length, 3 * (MAX_EVENTS_PER_ACTOR_DAY + 2) + 2);
    const folded = all.filter((e) => e.repeated !== undefined);
    assert.deepEqual(
      folded.map((e) => [e.action, e.repeated, e.detail]).slice(0, 2),
      [
        ["settings.disallow", 170, "a269"],
        ["settings.allow", 170, "a269"],
      ],
    );
    assert.equal(all[0]!.detail, "mine", "a change after the flood is shown");
    const run = await cli(h.kv, [
      "audit",
      project.id,
      "--json",
      "--limit",
      "2",
    ]);
    assert.equal(run.code, 0);
    const lines = run.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((l) => l.detail), ["mine", "a269"]);
    const next = await cli(h.kv, [
      "audit",
      project.id,
      "--json",
      "--limit",
      "1",
      "--before",
      lines[1].id,
    ]);
    assert.equal(JSON.parse(next.stdout).action, "settings.allow");
    const bad = await cli(h.kv, ["audit", project.id, "--before", "x"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /Cannot read --before/);
  },
);

dashboardTest(
  "the audit page shows 200 events, folded ones with their count, and links to the earlier ones",
  async (h) => {
    const project = await createProject(h.kv, { name: "web" });
    for (let i = 0; i < MAX_EVENTS_PER_ACTOR_DAY + 5; i++) {
      await recordAudit(h.kv, {
        projectId: project.id,
        actor: "ana@example.com",
        action: "settings.allow",
        detail: `v${i}`,
        now: h.clock.now,
      });
      h.clock.advance(1);
    }
    const browser = await signIn(h.dash);
    const first = await (await browser.get(`/projects/${project.id}/audit`))
      .text();
    assert.match(textOf(first), /settings\.allow ×5 v204/);
    const older = /id="older-events" href="([^"]+)"/.exec(first)![1]!
      .replaceAll("&amp;", "&");
    const second = await (await browser.get(older)).text();
    assert.match(textOf(second), /v0/);
    // The last page links to nothing older.
    assert.doesNotMatch(second, /id="older-events"/);
    // A page: a bad cursor says why on a page, an empty one is the first.
    const bad = await browser.get(`/projects/${project.id}/audit?before=x`);
    assert.equal(bad.status, 400);
    assert.match(bad.headers.get("content-type") ?? "", /text\/html/);
    assert.match(textOf(await bad.text()), /Cannot read event id "x"/);
    const empty = await browser.get(`/projects/${project.id}/audit?before=`);
    assert.equal(empty.status, 200);
    assert.match(textOf(await empty.text()), /settings\.allow ×5 v204/);
  },
);

dashboardTest(
  "project commands write their changes to the project's audit log, never the secret",
  async (h) => {
    const created = await cli(h.kv, [
      "project",
      "create",
      "--name",
      "web",
      "--json",
    ]);
    assert.equal(created.code, 0, created.stderr);
    const { projectId, secret } = JSON.parse(created.stdout);
    await cli(h.kv, [
      "project",
      "allow",
      projectId,
      "https://shop.example.com",
    ]);
    const rotated = await cli(h.kv, [
      "project",
      "rotate-secret",
      projectId,
      "--json",
    ]);
    assert.equal(rotated.code, 0, rotated.stderr);
    const run = await cli(h.kv, ["audit", projectId, "--json"]);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(
      run.stdout.trim().split("\n").map((l) => {
        const e = JSON.parse(l);
        return [e.actor, e.action, e.detail];
      }),
      [
        ["cli", "secret.rotate", "24h"],
        ["cli", "settings.allow", "https://shop.example.com"],
        ["cli", "project.create", "web"],
      ],
    );
    const text = await everything(h.kv);
    const audit = text.split("\n").filter((l) => l.includes('"action"'));
    assert.ok(audit.every((l) => !l.includes(secret)));
    assert.ok(
      audit.every((l) => !l.includes(JSON.parse(rotated.stdout).secret)),
    );
  },
);

Deno.test("eight password checks at once stay within +150 MB of RSS (scrypt runs two at a time)", async () => {
  const hash = await hashPassword("the right password");
  const before = Deno.memoryUsage().rss;
  const [results, peak] = await peakRss(() =>
    Promise.all(
      Array.from(
        { length: 8 },
        (_, i) =>
          verifyPassword(i === 0 ? "the right password" : `wrong ${i}`, hash),
      ),
    )
  );
  assert.deepEqual(results, [
    true,
    false,
    false,
    false,
    false,
    false,
    false,
    false,
  ]);
  const grown = peak - before;
  assert.ok(grown < 150 * 1024 * 1024, `RSS grew ${grown} bytes`);
});
