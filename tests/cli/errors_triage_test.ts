/**
 * `deno task errors` with triage and releases, run in-process on entries
 * stored through the pipeline: the JSON fields of each group, the triage
 * subcommands (audited), the status filter, stacks printed as lines, and
 * `deno task releases`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAudit } from "../../db/audit.ts";
import { errorGroupTriageKey } from "../../db/keys.ts";
import { encodeJson } from "../../db/kv.ts";
import { addUser } from "../../db/users.ts";
import { cli } from "../_helpers/cli.ts";
import { type Harness, harnessTest } from "../_helpers/harness.ts";
import { store } from "../_helpers/dashboard.ts";
import { CART_FRAME, CART_STACK } from "../_helpers/stacks.ts";

const STACK =
  `${CART_STACK}\n    at main (https://shop.example.com/app.js:9:1)`;

async function seed(h: Harness) {
  const project = await h.project(["https://app.example.com"]);
  await store(h, project.id, [
    {
      level: "error",
      data: { title: "Cart failed", stack: STACK },
      context: { release: "1.2.0", userId: "u1" },
    },
    {
      level: "error",
      data: { title: "Cart failed", stack: STACK },
      context: { release: "1.3.0", userId: "u2" },
    },
    { level: "error", data: { title: "Other" }, context: {} },
  ]);
  const run = (args: string[]) => cli(h.kv, args, { clock: h.clock });
  const listed = await run(["errors", project.id, "--json"]);
  assert.equal(listed.code, 0, listed.stderr);
  const groups = listed.stdout.trim().split("\n").map((l) => JSON.parse(l));
  const cart = groups.find((g) => g.title === "Cart failed")!;
  return { project, run, groups, cart };
}

harnessTest(
  "errors --json gives each group's fingerprint, title, count, users, times, status, releases, frame and assignee",
  async (h) => {
    const { cart, groups } = await seed(h);
    assert.equal(groups.length, 2);
    for (
      const field of [
        "fingerprint",
        "title",
        "count",
        "users",
        "firstSeen",
        "lastSeen",
        "status",
        "firstRelease",
        "lastRelease",
        "frame",
        "assignee",
      ]
    ) assert.ok(field in cart, `${field} is there`);
    assert.equal(cart.count, 2);
    assert.equal(cart.users, 2);
    assert.equal(cart.status, "unresolved");
    assert.equal(cart.firstRelease, "1.2.0");
    assert.equal(cart.lastRelease, "1.3.0");
    assert.deepEqual(cart.frame, CART_FRAME);
    assert.equal(cart.assignee, null);
  },
);

harnessTest(
  "errors resolve, ignore, reopen and assign change a group's status, each in the audit log",
  async (h) => {
    const { project, run, cart } = await seed(h);
    const fp = cart.fingerprint;
    const resolved = await run([
      "errors",
      "resolve",
      project.id,
      fp,
      "--in-release",
      "1.4.0",
    ]);
    assert.equal(resolved.code, 0, resolved.stderr);
    assert.match(resolved.stdout, /resolved in release 1\.4\.0/);
    let one = JSON.parse(
      (await run(["errors", project.id, fp, "--json"])).stdout,
    );
    assert.equal(one.status, "resolved");
    assert.equal(one.resolvedIn, "1.4.0");
    // The filter: resolved groups leave the unresolved list.
    const open = await run([
      "errors",
      project.id,
      "--status",
      "unresolved",
      "--json",
    ]);
    assert.deepEqual(
      open.stdout.trim().split("\n").map((l) => JSON.parse(l).title),
      ["Other"],
    );
    await addUser(h.kv, {
      email: "ana@example.com",
      password: "correct horse",
      role: "member",
      projects: [project.id],
    });
    assert.equal(
      (await run(["errors", "assign", project.id, fp, "ana@example.com"])).code,
      0,
    );
    const nobody = await run(["errors", "assign", project.id, fp, "x@y.z"]);
    assert.equal(nobody.code, 1);
    assert.match(nobody.stderr, /no account that may read this project/);
    assert.equal(
      (await run(["errors", "ignore", project.id, fp, "--until-count", "5"]))
        .code,
      0,
    );
    one = JSON.parse((await run(["errors", project.id, fp, "--json"])).stdout);
    assert.equal(one.status, "ignored");
    assert.equal(one.assignee, "ana@example.com");
    const bad = await run([
      "errors",
      "ignore",
      project.id,
      fp,
      "--until",
      "soon",
    ]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /Cannot read --until "soon"/);
    const misplaced = await run([
      "errors",
      "reopen",
      project.id,
      fp,
      "--in-release",
      "1",
    ]);
    assert.equal(misplaced.code, 2);
    assert.equal((await run(["errors", "reopen", project.id, fp])).code, 0);
    one = JSON.parse((await run(["errors", project.id, fp, "--json"])).stdout);
    assert.equal(one.status, "unresolved");
    const audit = await listAudit(h.kv, project.id);
    assert.deepEqual(
      audit.map((e) => e.action).reverse(),
      ["error.resolve", "error.assign", "error.ignore", "error.reopen"],
    );
    assert.ok(audit.every((e) => e.detail?.startsWith(fp)));
  },
);

harnessTest(
  "errors FINGERPRINT prints the latest stack as lines",
  async (h) => {
    const { project, run, cart } = await seed(h);
    const text = await run(["errors", project.id, cart.fingerprint]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      /\n {2}TypeError: cart is undefined\n {6}at pay \(https:\/\/shop\.example\.com\/app\.js:3:9\)\n/,
    );
    assert.doesNotMatch(text.stdout, /\\n/);
  },
);

harnessTest(
  "releases lists a project's releases, the latest version first",
  async (h) => {
    const { project, run } = await seed(h);
    const out = await run(["releases", project.id, "--json"]);
    assert.equal(out.code, 0, out.stderr);
    const rows = out.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(
      rows.map((r) => [r.release, r.entries, r.errors, r.newGroups]),
      [["1.3.0", 1, 1, 0], ["1.2.0", 1, 1, 1]],
    );
    const table = await run(["releases", project.id]);
    assert.match(table.stdout, /RELEASE +FIRST SEEN/);
  },
);

harnessTest(
  "logs prints an entry's stack as lines under it, each inert",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    await store(h, project.id, [{
      level: "error",
      data: { title: "Boom", stack: `${STACK}\n    at \u001b[2J (x.js:1:1)` },
    }]);
    const out = await cli(h.kv, ["logs", project.id], { clock: h.clock });
    assert.equal(out.code, 0, out.stderr);
    const lines = out.stdout.split("\n");
    const at = lines.findIndex((l) => l.includes('"title":"Boom"'));
    assert.ok(at >= 0);
    assert.doesNotMatch(lines[at]!, /stack|\\n/);
    assert.deepEqual(lines.slice(at + 1, at + 5), [
      "    TypeError: cart is undefined",
      "        at pay (https://shop.example.com/app.js:3:9)",
      "        at main (https://shop.example.com/app.js:9:1)",
      "        at \\u{1b}[2J (x.js:1:1)",
    ]);
    const json = await cli(h.kv, ["logs", project.id, "--json"], {
      clock: h.clock,
    });
    assert.match(json.stdout, /"stack":"TypeError: cart is undefined\\n/);
  },
);

harnessTest(
  "errors ignore --until past 100 years ahead or before now exits 2 and changes nothing",
  async (h) => {
    const { project, run, cart } = await seed(h);
    const fp = cart.fingerprint;
    for (
      const until of ["99999999999w", "36501d", "2200-01-01", "2020-01-01"]
    ) {
      const out = await run([
        "errors",
        "ignore",
        project.id,
        fp,
        "--until",
        until,
      ]);
      assert.equal(out.code, 2, `${until}: ${out.stderr}`);
      assert.equal(out.stdout, "");
      assert.equal(out.stderr.trim().split("\n").length, 1, out.stderr);
      assert.match(
        out.stderr,
        /Cannot use --until "[^"]+": expected a time after now and at most 36,500 days \(100 years\) ahead/,
      );
    }
    assert.deepEqual(await listAudit(h.kv, project.id), []);
    const listed = await run(["errors", project.id, "--json"]);
    assert.equal(listed.code, 0, listed.stderr);
    const one = JSON.parse(
      (await run(["errors", project.id, fp, "--json"])).stdout,
    );
    assert.equal(one.status, "unresolved");
    assert.equal("ignoredUntil" in one, false);
    const ok = await run([
      "errors",
      "ignore",
      project.id,
      fp,
      "--until",
      "36500d",
    ]);
    assert.equal(ok.code, 0, ok.stderr);
    const ignored = JSON.parse(
      (await run(["errors", project.id, fp, "--json"])).stdout,
    );
    assert.equal(ignored.status, "ignored");
    assert.equal(
      ignored.ignoredUntil,
      new Date(h.clock.now() + 36_500 * 86_400_000).toISOString(),
    );
  },
);

harnessTest(
  "errors --json lists a group ignored until a time no date can show, stored before the bound",
  async (h) => {
    const { project, run, cart } = await seed(h);
    await h.kv.set(
      errorGroupTriageKey(project.id, cart.id),
      encodeJson({
        state: "ignored",
        at: h.clock.now(),
        by: "cli",
        count: 2,
        untilMs: h.clock.now() + 99999999999 * 7 * 86_400_000,
      }),
    );
    for (const args of [[], [cart.fingerprint]]) {
      const out = await run(["errors", project.id, ...args, "--json"]);
      assert.equal(out.code, 0, out.stderr);
      const one = out.stdout.trim().split("\n").map((l) => JSON.parse(l))
        .find((g) => g.fingerprint === cart.fingerprint);
      assert.equal(one.status, "ignored");
      assert.equal("ignoredUntil" in one, false);
    }
  },
);
