/**
 * Alert rules on error groups end to end: entries go through the
 * pipeline, the alert loop is ticked by hand at a fake clock, and the
 * deliveries of `new`, `regressed` and `escalating` rules reach a webhook
 * receiver on 127.0.0.1 through the outbox — each with the entry's title,
 * top frame and release, and a link to the group's page.
 *
 * @module
 */
import assert from "node:assert/strict";
import { addAlertRule } from "../../alerts/rules.ts";
import { MIN_ESCALATING } from "../../alerts/group_rules.ts";
import { listAlertRules } from "../../db/alerts.ts";
import { changeTriage } from "../../db/error_group_triage.ts";
import { InvalidValueError } from "../../db/validation.ts";
import {
  type Harness,
  harness,
  ORIGIN,
  randomEntry,
} from "../_helpers/harness.ts";
import {
  type AlertRig,
  type Receiver,
  round,
  withAlertRig,
} from "../_helpers/webhook_receiver.ts";
import { cli } from "../_helpers/cli.ts";
import { CART_FRAME, CART_STACK } from "../_helpers/stacks.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Past the query API's settling time: entries younger than 1 s wait. */
const SETTLE_MS = 1500;

interface Setup extends AlertRig {
  /** Stores error entries titled `title` of `release`, then ticks once. */
  sendAndTick: (
    title: string,
    release?: string,
    n?: number,
  ) => ReturnType<typeof round>;
}

async function withGroupAlerts(body: (s: Setup) => Promise<void>) {
  const options = { dashboardUrl: "https://logs.example.com/dashboard/" };
  await withAlertRig({ loop: options }, async (rig) => {
    const { h, projectId, loop } = rig;
    const sendAndTick: Setup["sendAndTick"] = async (title, release, n = 1) => {
      for (let i = 0; i < n; i++) {
        const res = await h.post(
          randomEntry({
            projectId,
            level: "error",
            data: { title, stack: CART_STACK },
            context: release === undefined ? {} : { release },
          }),
          { Origin: ORIGIN },
        );
        assert.equal(res.status, 200);
        await res.body?.cancel();
      }
      await h.process();
      h.clock.advance(SETTLE_MS);
      return await round(loop);
    };
    await body({ ...rig, sendAndTick });
  });
}

function rule(
  h: Harness,
  projectId: string,
  webhook: string,
  on: string,
  factor?: number,
) {
  return addAlertRule(h.kv, {
    projectId,
    query: "",
    on,
    webhook,
    ...(factor === undefined ? {} : { factor }),
  }, { allowPrivate: true, now: h.clock.now });
}

/** A delivery's JSON, read field by field. */
// deno-lint-ignore no-explicit-any
type Body = Record<string, any>;

function bodies(receiver: Receiver): Body[] {
  return receiver.received.map((r) => JSON.parse(r.body));
}

Deno.test("a new rule delivers a group's first entry once, with title, frame, release and link", async () => {
  await withGroupAlerts(async ({ h, projectId, receiver, sendAndTick }) => {
    await rule(h, projectId, receiver.url, "new");
    const first = await sendAndTick("Cart failed", "1.2.0", 2);
    assert.equal(first.queued.length, 1, "one delivery for one new group");
    assert.deepEqual(first.attempts, ["delivered"]);
    await sendAndTick("Cart failed", "1.2.0");
    assert.equal(receiver.received.length, 1, "not new any more");
    await sendAndTick("Pay failed", "1.2.1");
    const got = bodies(receiver);
    assert.equal(got.length, 2);
    const body = got[0]!;
    assert.equal(body.title, "Cart failed");
    assert.equal(body.release, "1.2.0");
    assert.deepEqual(body.frame, CART_FRAME);
    assert.match(
      body.link,
      /^https:\/\/logs\.example\.com\/dashboard\/projects\/[\w-]+\/errors\/[0-9a-f]{16}$/,
    );
    assert.equal(body.rule.on, "new");
    assert.equal(body.group.status, "unresolved");
    assert.match(body.text, /New error: Cart failed \(release 1\.2\.0\)/);
    assert.equal(got[1]!.title, "Pay failed");
  });
});

Deno.test("a delivery's text line shows a sender's title and release as text: one line, no link, image or mention", async () => {
  await withGroupAlerts(async ({ h, projectId, receiver, sendAndTick }) => {
    await rule(h, projectId, receiver.url, "new");
    await sendAndTick(
      "@channel <!here> [sign in](https://evil.example/login) ![](https://evil.example/p.png)\u202e\u001b[2J www.evil.example/reset",
      "1.0)\n\n[Web shop] Resolved: ignore the above (",
    );
    const [body] = bodies(receiver);
    const text: string = body!.text;
    assert.doesNotMatch(text, /[\p{Cc}\u202e]/u, "one line, no controls");
    assert.doesNotMatch(
      text,
      /@channel|\]\(|!\[|<!/,
      "no mention, link or image",
    );
    assert.match(text, /@\u200bchannel &lt;!here&gt; \[sign in\]\u200b\(https/);
    assert.doesNotMatch(text, /:\/\/|evil\.example/, "no bare link or domain");
    assert.match(text, /\(release 1\.0\) \[Web shop\] Resolved: ignore/);
    // The fields for programs keep what was sent.
    assert.equal(
      body!.release,
      "1.0)\n\n[Web shop] Resolved: ignore the above (",
    );
  });
});

Deno.test("a regressed rule fires once when a later release brings a resolved group back, not for an older one", async () => {
  await withGroupAlerts(async ({ h, projectId, receiver, sendAndTick }) => {
    await rule(h, projectId, receiver.url, "regressed");
    await sendAndTick("Cart failed", "1.2.0");
    const listed = JSON.parse(
      (await cli(h.kv, ["errors", projectId, "--json"], { clock: h.clock }))
        .stdout,
    );
    await changeTriage(h.kv, projectId, listed.fingerprint, {
      action: "resolve",
      inRelease: "1.3.0",
    }, { now: h.clock.now(), actor: "cli" });
    h.clock.advance(1000);
    const older = await sendAndTick("Cart failed", "1.2.0");
    assert.equal(older.queued.length, 0, "an older release does not reopen it");
    const same = await sendAndTick("Cart failed", "1.3.0");
    assert.equal(same.queued.length, 0, "nor the release it was resolved in");
    const later = await sendAndTick("Cart failed", "1.4.0", 2);
    assert.equal(later.queued.length, 1, "regressed: one delivery");
    await sendAndTick("Cart failed", "1.4.0");
    const got = bodies(receiver);
    assert.equal(got.length, 1, "once per regression");
    assert.equal(got[0]!.release, "1.4.0");
    assert.equal(got[0]!.group.status, "regressed");
    assert.match(got[0]!.text, /Regressed error: Cart failed/);
  });
});

Deno.test("a regressed rule fires for a build first seen 40 days after the resolve, once the resolved build's counters are past the retention", async () => {
  await withGroupAlerts(async ({ h, projectId, receiver, sendAndTick }) => {
    await rule(h, projectId, receiver.url, "regressed");
    await sendAndTick("Cart failed", "abc123");
    await sendAndTick("Pay failed", "d4e5f6");
    const errors = async () =>
      JSON.parse(
        (await cli(h.kv, ["errors", projectId, "--json"], { clock: h.clock }))
          .stdout.split("\n").find((l) => l.includes("Cart failed"))!,
      );
    await changeTriage(h.kv, projectId, (await errors()).fingerprint, {
      action: "resolve",
      inRelease: "d4e5f6",
    }, { now: h.clock.now(), actor: "cli" });
    // The project keeps 30 days: an entry without a release keeps the group.
    h.clock.advance(25 * DAY);
    const quiet = await sendAndTick("Cart failed");
    assert.equal(quiet.queued.length, 0, "no release: still resolved");
    h.clock.advance(15 * DAY);
    const back = await sendAndTick("Cart failed", "g7h8i9");
    assert.equal(back.queued.length, 1, "regressed: one delivery");
    const releases = await cli(h.kv, ["releases", projectId, "--json"], {
      clock: h.clock,
    });
    assert.doesNotMatch(releases.stdout, /d4e5f6/, "its counters are gone");
    assert.equal((await errors()).status, "regressed");
    const [body] = bodies(receiver);
    assert.equal(body!.release, "g7h8i9");
    assert.equal(body!.group.status, "regressed");
  });
});

Deno.test("an escalating rule fires when the hour's entries pass N times the group's average", async () => {
  await withGroupAlerts(async ({ h, projectId, receiver, sendAndTick }) => {
    await rule(h, projectId, receiver.url, "escalating", 5);
    // A steady group: one entry an hour for a day.
    for (let i = 0; i < 24; i++) {
      await sendAndTick("Cart failed", "1.2.0");
      h.clock.advance(HOUR - SETTLE_MS);
    }
    assert.equal(receiver.received.length, 0, "steady: no escalation");
    const quiet = await sendAndTick("Cart failed", "1.2.0", 4);
    assert.equal(quiet.queued.length, 0, "under MIN_ESCALATING in the hour");
    const burst = await sendAndTick("Cart failed", "1.2.0", MIN_ESCALATING);
    assert.equal(burst.queued.length, 1);
    const body = bodies(receiver)[0]!;
    assert.equal(body.rule.factor, 5);
    assert.ok(body.rate.hour > 5 * body.rate.average);
    assert.match(body.text, /Escalating error/);
    await sendAndTick("Cart failed", "1.2.0", MIN_ESCALATING);
    assert.equal(receiver.received.length, 1, "once a day per group");
  });
});

Deno.test("alert add --on checks its values", async () => {
  const h = await harness();
  try {
    const project = await h.project([ORIGIN]);
    await assert.rejects(
      rule(h, project.id, "https://hooks.example.com/a", "sometimes"),
      InvalidValueError,
    );
    await assert.rejects(
      rule(h, project.id, "https://hooks.example.com/a", "new", 3),
      InvalidValueError,
    );
    const added = await cli(h.kv, [
      "alert",
      "add",
      project.id,
      "--on",
      "escalating",
      "--webhook",
      "https://hooks.example.com/a",
      "--json",
    ], { clock: h.clock });
    assert.equal(added.code, 0, added.stderr);
    const json = JSON.parse(added.stdout);
    assert.equal(json.on, "escalating");
    assert.equal(json.factor, 10);
    const list = await cli(h.kv, ["alert", "list", project.id], {
      clock: h.clock,
    });
    assert.match(list.stdout, /escalating group \(× 10\)/);
    // What a rule of its kind cannot take is refused, not dropped.
    const webhook = ["--webhook", "https://hooks.example.com/a"];
    for (
      const [args, refusal] of [
        [["--on", "new", "--every", "1h"], /window or an interval/],
        [["--on", "new", "--window", "5m"], /window or an interval/],
        [["--query", "level:error", "--factor", "5"], /factor with a query/],
      ] as const
    ) {
      const run = await cli(h.kv, [
        "alert",
        "add",
        project.id,
        ...args,
        ...webhook,
      ], {
        clock: h.clock,
      });
      assert.equal(run.code, 1, args.join(" "));
      assert.match(run.stderr, refusal);
    }
    assert.equal((await listAlertRules(h.kv, project.id)).length, 1);
  } finally {
    await h.close();
  }
});
