/**
 * Changes sent at once that may only happen once: revoking one token,
 * removing one account, and creating tokens of one name. One succeeds and
 * is in the audit log once; the others are answered as not found or as a
 * name taken (docs/accounts.md#read-tokens). Most callers are made to read
 * together before any of them writes, the interleaving that let each one
 * succeed.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAudit } from "../../db/audit.ts";
import {
  createReadToken,
  listReadTokens,
  type ReadToken,
} from "../../db/tokens.ts";
import { InvalidValueError } from "../../db/validation.ts";
import { addAccount } from "../_helpers/dashboard_accounts.ts";
import { createDashboard } from "../../dashboard/app.ts";
import { PASSWORD, signIn } from "../_helpers/dashboard.ts";
import { cli } from "../_helpers/cli.ts";
import { projectTest } from "../_helpers/harness.ts";
import { within } from "../_helpers/hold.ts";
import { kvWith } from "../_helpers/kv_with.ts";

/**
 * `kv` whose first `n` reads (`get` or `list`) of keys starting with
 * `first` wait for one another: `n` callers all read what is stored
 * before any of them goes on to write.
 */
function meetingKv(kv: Deno.Kv, first: string, n: number): Deno.Kv {
  let left = n;
  let open!: () => void;
  const met = new Promise<void>((resolve) => (open = resolve));
  const meet = async (key: Deno.KvKey) => {
    if (key[0] !== first || left === 0) return;
    if (--left === 0) open();
    await within(met);
  };
  return kvWith(kv, {
    get: (async (
      key: Deno.KvKey,
      options?: { consistency?: Deno.KvConsistencyLevel },
    ) => {
      await meet(key);
      return await kv.get(key, options);
    }) as Deno.Kv["get"],
    list: ((selector: Deno.KvListSelector, options?: Deno.KvListOptions) =>
      (async function* () {
        await meet("prefix" in selector ? selector.prefix : []);
        yield* kv.list(selector, options);
      })()) as unknown as Deno.Kv["list"],
  });
}

/** The statuses of `responses`, their bodies let go. */
async function statuses(responses: Response[]): Promise<number[]> {
  for (const res of responses) await res.body?.cancel();
  return responses.map((res) => res.status).sort();
}

projectTest(
  "three revocations of one token on the settings page that all read it first: one 303, one audit event",
  async (h, project) => {
    const { record } = await createReadToken(h.kv, {
      projectId: project.id,
      name: "ci",
      createdBy: "cli",
    });
    const dash = createDashboard({
      kv: meetingKv(h.kv, "read_tokens", 3),
      password: PASSWORD,
      now: h.clock.now,
    });
    const admin = await signIn(dash);
    const path = `/projects/${project.id}/settings/tokens/revoke`;
    const answers = await Promise.all(
      [1, 2, 3].map(() => admin.post(path, { token: record.id })),
    );
    assert.deepEqual(await statuses(answers), [303, 400, 400]);
    assert.deepEqual(await listReadTokens(h.kv, project.id), []);
    const events = (await listAudit(h.kv, project.id))
      .filter((e) => e.action === "token.revoke");
    assert.deepEqual(events.map((e) => e.detail), [`ci (${record.id})`]);
  },
);

projectTest(
  "three revocations of one token that all read it first: one revokes it, one audit event",
  async (h, project) => {
    const { record } = await createReadToken(h.kv, {
      projectId: project.id,
      name: "ci",
      createdBy: "cli",
    });
    const kv = meetingKv(h.kv, "read_tokens", 3);
    const runs = await Promise.all(
      [1, 2, 3].map(() => cli(kv, ["token", "revoke", project.id, "ci"])),
    );
    assert.deepEqual(runs.map((r) => r.code).sort(), [0, 1, 1]);
    for (const run of runs.filter((r) => r.code === 1)) {
      assert.match(run.stderr, /Cannot find token "ci"/);
    }
    const events = (await listAudit(h.kv, project.id))
      .filter((e) => e.action === "token.revoke");
    assert.deepEqual(events.map((e) => e.detail), [`ci (${record.id})`]);
  },
);

projectTest(
  "two removals of one account that both read it first: one removes it, one audit event",
  async (h, project) => {
    await addAccount(h.kv, "ana@example.com", "viewer", [project.id]);
    const kv = meetingKv(h.kv, "users", 2);
    const runs = await Promise.all(
      [1, 2].map(() => cli(kv, ["user", "remove", "ana@example.com"])),
    );
    assert.deepEqual(runs.map((r) => r.code).sort(), [0, 1]);
    assert.match(runs.find((r) => r.code === 1)!.stderr, /Cannot find user/);
    for (const scope of [null, project.id]) {
      const events = (await listAudit(h.kv, scope))
        .filter((e) => e.action === "user.remove");
      assert.deepEqual(events.map((e) => e.detail), ["ana@example.com"]);
    }
  },
);

projectTest(
  "tokens of one name created at once, each having found the name free, make one token; once revoked, the name is free again",
  async (h, project) => {
    const kv = meetingKv(h.kv, "read_tokens", 4);
    const made = await Promise.allSettled(
      [1, 2, 3, 4].map(() =>
        createReadToken(kv, {
          projectId: project.id,
          name: "ci",
          createdBy: "cli",
        })
      ),
    );
    const refused = made.filter((m) => m.status === "rejected")
      .map((m) => (m as PromiseRejectedResult).reason);
    assert.equal(refused.length, 3);
    for (const reason of refused) {
      assert.ok(reason instanceof InvalidValueError);
      assert.match(reason.message, /has a token of this name/);
    }
    const tokens = await listReadTokens(h.kv, project.id);
    assert.deepEqual(tokens.map((t: ReadToken) => t.name), ["ci"]);
    const again = await cli(h.kv, ["token", "revoke", project.id, "ci"]);
    assert.equal(again.code, 0, again.stderr);
    await createReadToken(h.kv, {
      projectId: project.id,
      name: "ci",
      createdBy: "cli",
    });
    assert.equal((await listReadTokens(h.kv, project.id)).length, 1);
  },
);
