/**
 * Where a webhook may point: private, loopback and reserved addresses are
 * refused when a rule is added and again, after resolution, when a
 * delivery is sent, unless ALERT_PRIVATE_TARGETS=allow.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAlertRules, readAlertHistory } from "../../db/alerts.ts";
import { addAlertRule, MAX_RULES_PER_PROJECT } from "../../alerts/rules.ts";
import {
  checkResolvedTarget,
  checkWebhookUrl,
  isPrivateAddress,
  type Resolver,
  WebhookTargetError,
} from "../../alerts/targets.ts";
import { alertLoopOn, round } from "../_helpers/webhook_receiver.ts";
import { projectTest, randomEntry, withHarness } from "../_helpers/harness.ts";
import { stepEachGives } from "../_helpers/table.ts";

Deno.test("isPrivateAddress knows the refused ranges", async (t) => {
  const cases: [string, boolean | null][] = [
    ["127.0.0.1", true],
    ["127.255.0.9", true],
    ["10.0.0.1", true],
    ["172.16.0.1", true],
    ["172.31.255.255", true],
    ["172.32.0.1", false],
    ["192.168.1.1", true],
    ["169.254.169.254", true],
    ["100.64.0.1", true],
    ["100.128.0.1", false],
    ["0.0.0.0", true],
    ["224.0.0.1", true],
    ["255.255.255.255", true],
    ["8.8.8.8", false],
    ["93.184.215.14", false],
    ["::", true],
    ["::1", true],
    ["[::1]", true],
    ["fc00::1", true],
    ["fd12:3456::1", true],
    ["fe80::1", true],
    ["ff02::1", true],
    ["::ffff:127.0.0.1", true],
    ["::ffff:7f00:1", true],
    // IPv4-mapped and -translated forms are never public, whatever they embed.
    ["::ffff:8.8.8.8", true],
    ["::ffff:0:127.0.0.1", true],
    ["[::ffff:0:7f00:1]", true],
    ["::8.8.8.8", true],
    ["64:ff9b::a00:1", true],
    ["64:ff9b::808:808", true],
    ["64:ff9b:1::1", true],
    ["100::1", true],
    ["[100::1]", true],
    ["2001::1", true],
    ["2001:1ff:ffff::1", true],
    ["2001:db8::1", true],
    ["[2001:DB8:0:0:0:0:0:1]", true],
    ["2002:7f00:1::", true],
    ["2002:808:808::1", true],
    ["3fff::1", true],
    ["3fff:fff:ffff::1", true],
    ["fec0::1", true],
    ["4000::1", true],
    ["192.0.2.1", true],
    ["198.51.100.7", true],
    ["203.0.113.255", true],
    ["192.0.0.8", true],
    ["198.19.255.255", true],
    ["192.88.99.1", true],
    ["198.20.0.1", false],
    ["2001:4860:4860::8888", false],
    ["2001:200::1", false],
    ["2003::1", false],
    ["3ffe::1", false],
    ["2a00:1450:4001::200e", false],
    ["2001:db8::1::2", null],
    ["1:2:3:4:5:6:7:8:9", null],
    ["example.com", null],
  ];
  await stepEachGives(t, isPrivateAddress, cases);
});

Deno.test("a webhook on a private or loopback host is refused without ALERT_PRIVATE_TARGETS", async (t) => {
  for (
    const url of [
      "http://127.0.0.1:9000/hook",
      "http://localhost/hook",
      "http://api.localhost/hook",
      "http://[::1]:8080/",
      "http://0x7f.1/",
      "http://2130706433/",
      "http://169.254.169.254/latest/meta-data",
      "http://10.1.2.3/",
      "http://[fd00::1]/",
      "http://192.0.2.1/",
      "http://198.51.100.1/",
      "http://203.0.113.9/",
      "http://[2001:db8::1]/",
      "http://[100::1]/",
      "http://[2002:7f00:1::]/",
      "http://[::ffff:0:127.0.0.1]/",
      "http://[::ffff:127.0.0.1]/",
      "http://[64:ff9b::7f00:1]/",
      "http://[64:ff9b:1::1]/",
      "http://[2002::1]/",
      "http://[3fff::1]/",
    ]
  ) {
    await t.step(url, () => {
      assert.throws(
        () => checkWebhookUrl(url, { allowPrivate: false }),
        WebhookTargetError,
      );
      assert.ok(checkWebhookUrl(url, { allowPrivate: true }));
    });
  }
  await t.step("other schemes are refused either way", () => {
    assert.throws(
      () => checkWebhookUrl("ftp://example.com/", { allowPrivate: true }),
      /expected an http or https URL/,
    );
    assert.throws(
      () => checkWebhookUrl("not a url", { allowPrivate: true }),
      /expected an absolute http or https URL/,
    );
  });
  await t.step("a public host passes", () => {
    assert.equal(
      checkWebhookUrl("https://hooks.example.com/a", { allowPrivate: false }),
      "https://hooks.example.com/a",
    );
  });
});

projectTest(
  "adding a rule with a private webhook stores nothing",
  async (h, project) => {
    await assert.rejects(
      addAlertRule(h.kv, {
        projectId: project.id,
        query: "level:critical",
        webhook: "http://192.168.0.10/hook",
      }, { allowPrivate: false }),
      /ALERT_PRIVATE_TARGETS=allow/,
    );
    assert.deepEqual(await listAlertRules(h.kv, project.id), []);
  },
);

Deno.test("a host name resolving to a private address is refused at delivery", async (t) => {
  const resolver = (map: Record<string, string[]>): Resolver => (host, type) =>
    Promise.resolve(
      (map[host] ?? []).filter((a) =>
        type === "A" ? !a.includes(":") : a.includes(":")
      ),
    );
  await t.step("any private answer refuses, without naming it", async () => {
    for (
      const refused of ["::1", "127.0.0.1", "192.0.2.1", "2002:7f00:1::"]
    ) {
      await assert.rejects(
        checkResolvedTarget("https://hooks.example.com/x", {
          allowPrivate: false,
          resolve: resolver({
            "hooks.example.com": ["93.184.215.14", refused],
          }),
        }),
        (error: Error) => {
          assert.ok(error instanceof WebhookTargetError);
          assert.equal(error.message, "refused: not a public address");
          return true;
        },
      );
    }
  });
  await t.step("no answer refuses", async () => {
    await assert.rejects(
      checkResolvedTarget("https://nowhere.example.com/x", {
        allowPrivate: false,
        resolve: resolver({}),
      }),
      /Cannot resolve webhook host "nowhere.example.com"/,
    );
  });
  await t.step(
    "a lookup that fails refuses, whatever the other answers",
    async () => {
      await assert.rejects(
        checkResolvedTarget("https://hooks.example.com/x", {
          allowPrivate: false,
          resolve: (_, type) =>
            type === "A"
              ? Promise.reject(new Error("SERVFAIL"))
              : Promise.resolve(["2606:2800:21f:cb07:6820:80da:af6b:8b2c"]),
        }),
        /Cannot resolve webhook host "hooks.example.com"/,
      );
    },
  );
  await t.step("public answers pass", async () => {
    await checkResolvedTarget("https://hooks.example.com/x", {
      allowPrivate: false,
      resolve: resolver({ "hooks.example.com": ["93.184.215.14"] }),
    });
  });
  for (
    const [name, answers, outcome, error] of [
      [
        "a refused address fails at once, the address not shown",
        ["10.0.0.5"],
        "failed",
        /^refused: not a public address$/,
      ],
      [
        "a name that does not resolve now is retried",
        [],
        "retrying",
        /Cannot resolve webhook host/,
      ],
    ] as const
  ) {
    await t.step(
      `the delivery is not sent and its attempt is recorded: ${name}`,
      async () => {
        await withHarness(async (h) => {
          const project = await h.project(["https://app.example.com"]);
          const rule = await addAlertRule(h.kv, {
            projectId: project.id,
            query: "level:critical",
            webhook: "https://hooks.example.com/x",
          }, { allowPrivate: false, now: h.clock.now });
          let fetched = 0;
          const loop = alertLoopOn(h, {
            allowPrivate: false,
            resolve: resolver({ "hooks.example.com": [...answers] }),
            fetch: () => {
              fetched++;
              return Promise.resolve(new Response("ok"));
            },
          });
          const res = await h.post(
            randomEntry({ projectId: project.id, level: "critical" }),
            { Origin: "https://app.example.com" },
          );
          await res.body?.cancel();
          await h.process();
          h.clock.advance(3000);
          assert.deepEqual((await round(loop)).attempts, [outcome]);
          assert.equal(fetched, 0);
          const [attempt] = await readAlertHistory(h.kv, project.id, rule.id);
          assert.match(attempt!.error!, error);
        });
      },
    );
  }
});

projectTest(
  "a project holds at most MAX_RULES_PER_PROJECT alert rules",
  async (h, project) => {
    const add = () =>
      addAlertRule(h.kv, {
        projectId: project.id,
        query: "level:critical",
        webhook: "https://hooks.example.com/alert",
      }, { allowPrivate: false });
    for (let i = 0; i < MAX_RULES_PER_PROJECT; i++) await add();
    await assert.rejects(add, /has 50 already; remove one first/);
    assert.equal(
      (await listAlertRules(h.kv, project.id)).length,
      MAX_RULES_PER_PROJECT,
    );
  },
);
