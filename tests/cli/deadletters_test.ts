/**
 * `deno task deadletters`: listing the batches that kept failing, handing
 * them back to the sweeper and deleting them (one by id, all only with
 * `--all`; one cut short is deleted whole when run again), run in-process
 * against an in-memory KV.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAudit } from "../../db/audit.ts";
import { deadLetterKey, pendingBatchKey } from "../../db/keys.ts";
import { MAX_ATTEMPTS } from "../../queue/dead_letters.ts";
import { deadLetter, harnessTest, randomEntry } from "../_helpers/harness.ts";
import { assertRefused, cli, create, json } from "../_helpers/cli.ts";
import { keysNaming } from "../_helpers/batches.ts";
import { kvWith } from "../_helpers/kv_with.ts";

harnessTest(
  "deadletters lists dead letters and replays them for the sweeper",
  async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    const batchId = await deadLetter(
      h,
      randomEntry({ projectId }),
      "KV timed out",
    );

    const listed = json(await cli(h.kv, ["deadletters", "list", "--json"]));
    assert.deepEqual(listed, [{
      id: batchId,
      createdAt: "2026-01-01T00:00:00.000Z",
      count: 1,
      attempts: MAX_ATTEMPTS,
      error: "KV timed out",
      slices: 1,
    }]);
    const human = await cli(h.kv, ["deadletters", "list"]);
    assert.match(
      human.stdout,
      new RegExp(
        `^BATCH +CREATED +ENTRIES +ATTEMPTS +ERROR\n${batchId} +2026-01-01 00:00:00Z +1 +5 +KV timed out\n$`,
      ),
    );

    const replayed = await cli(h.kv, ["deadletters", "replay", batchId]);
    assert.equal(replayed.code, 0, replayed.stderr);
    assert.match(replayed.stdout, /^Replayed 1 dead letter \(1 entry\)/);
    assert.equal(
      (await cli(h.kv, ["deadletters", "list"])).stdout,
      "No dead letters\n",
    );
    await h.process();
    assert.equal((await h.logs(projectId)).length, 1);

    assertRefused(
      await cli(h.kv, ["deadletters", "replay", batchId]),
      `Cannot find dead letter "${batchId}"`,
    );
    assertRefused(
      await cli(h.kv, ["deadletters", "list", "nope"]),
      `Cannot find dead letter "nope"`,
    );
    // Past a key's size: names nothing, never made a key.
    const long = "f".repeat(3000);
    for (const command of ["list", "replay"]) {
      const run = await cli(h.kv, ["deadletters", command, long]);
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, /^Cannot find dead letter "f+/);
    }
    const none = json(await cli(h.kv, ["deadletters", "replay", "--json"]));
    assert.deepEqual(none, { replayed: [] });
  },
);

harnessTest(
  "deadletters delete deletes one dead letter with every slice; an unknown id is refused as replay refuses it",
  async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    const kept = await deadLetter(h, randomEntry({ projectId }));
    const batchId = await deadLetter(
      h,
      randomEntry({ projectId, data: { blob: "x".repeat(62_000) } }),
    );
    assert.equal((await keysNaming(h.kv, batchId)).length, 3);

    const run = await cli(h.kv, ["deadletters", "delete", batchId]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(
      run.stdout,
      "Deleted 1 dead letter (1 entry); it cannot be replayed\n",
    );
    assert.deepEqual(await keysNaming(h.kv, batchId), []);
    const listed = json(await cli(h.kv, ["deadletters", "list", "--json"]));
    assert.deepEqual((listed as unknown as { id: string }[]).map((l) => l.id), [
      kept,
    ]);

    // Gone: refused as replaying an unknown id is, with its exit code.
    const replay = await cli(h.kv, ["deadletters", "replay", batchId]);
    const again = await cli(h.kv, ["deadletters", "delete", batchId]);
    assertRefused(again, `Cannot find dead letter "${batchId}"`);
    assert.equal(again.code, replay.code);
    assert.equal(again.code, 1);
    for (const id of ["nope", "f".repeat(3000)]) {
      const unknown = await cli(h.kv, ["deadletters", "delete", id]);
      assertRefused(unknown, `Cannot find dead letter "${id.slice(0, 100)}"`);
      assert.equal(unknown.code, 1);
    }
    assert.equal((await keysNaming(h.kv, kept)).length, 2);
  },
);

harnessTest(
  "deadletters delete cut short leaves the dead letter whole, and run again deletes every slice",
  async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    const batchId = await deadLetter(
      h,
      randomEntry({ projectId, data: { blob: "x".repeat(62_000) } }),
    );
    // Listing the batch's slices fails: a KV error, or a crash there.
    const cut = kvWith(h.kv, {
      list: (selector, options) => {
        const prefix = "prefix" in selector ? selector.prefix : [];
        if (prefix[0] === "batch_slices") throw new Error("interrupted");
        return h.kv.list(selector, options);
      },
    });
    await assert.rejects(
      cli(cut, ["deadletters", "delete", batchId]),
      /interrupted/,
    );
    assert.equal((await keysNaming(h.kv, batchId)).length, 3);
    // Still listed whole, and so replayable.
    const listed = json(await cli(h.kv, ["deadletters", "list", "--json"]));
    assert.deepEqual(listed, [{
      id: batchId,
      createdAt: "2026-01-01T00:00:00.000Z",
      count: 1,
      attempts: MAX_ATTEMPTS,
      error: "disk full",
      slices: 2,
    }]);

    const again = await cli(h.kv, ["deadletters", "delete", batchId]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^Deleted 1 dead letter \(1 entry\)/);
    assert.deepEqual(await keysNaming(h.kv, batchId), []);
  },
);

harnessTest(
  "deadletters delete without ID deletes nothing unless --all says so",
  async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    const first = await deadLetter(h, randomEntry({ projectId }));
    h.clock.advance(60_000);
    const second = await deadLetter(h, randomEntry({ projectId }), "boom");

    const refusals = [
      ["delete"],
      ["delete", "--json"],
      ["delete", first, "--all"],
      ["list", "--all"],
      ["replay", "--all"],
    ];
    for (const args of refusals) {
      const run = await cli(h.kv, ["deadletters", ...args]);
      assert.equal(run.code, 2, `${args.join(" ")}: ${run.stderr}`);
      assertRefused(run, /^Cannot (run|use option)/);
    }
    assert.equal((await keysNaming(h.kv, first)).length, 2);
    assert.equal((await keysNaming(h.kv, second)).length, 2);

    const deleted = json(
      await cli(h.kv, ["deadletters", "delete", "--all", "--json"]),
    );
    const letter = { count: 1, attempts: MAX_ATTEMPTS, slices: 1 };
    assert.deepEqual(deleted, {
      deleted: [
        {
          id: first,
          createdAt: "2026-01-01T00:00:00.000Z",
          ...letter,
          error: "disk full",
        },
        {
          id: second,
          createdAt: "2026-01-01T00:01:00.000Z",
          ...letter,
          error: "boom",
        },
      ],
    });
    assert.deepEqual(await keysNaming(h.kv, first), []);
    assert.deepEqual(await keysNaming(h.kv, second), []);
    assert.equal(
      (await cli(h.kv, ["deadletters", "delete", "--all"])).stdout,
      "No dead letters to delete\n",
    );
    assert.deepEqual(
      json(await cli(h.kv, ["deadletters", "delete", "--all", "--json"])),
      { deleted: [] },
    );
    // The deletion is in the service's audit log, the empty ones are not.
    const events = (await listAudit(h.kv, null)).filter((e) =>
      e.action.startsWith("deadletter.")
    );
    assert.deepEqual(
      events.map((e) => [e.actor, e.action, e.detail]),
      [["cli", "deadletter.delete", `2: ${first}, ${second}`]],
    );
  },
);

harnessTest("deadletters delete --all counts what it deleted", async (h) => {
  const { projectId } = await create(h.kv, "https://app.example.com");
  await deadLetter(h, randomEntry({ projectId }));
  await deadLetter(h, randomEntry({ projectId }));
  const run = await cli(h.kv, ["deadletters", "delete", "--all"]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(
    run.stdout,
    "Deleted 2 dead letters (2 entries); they cannot be replayed\n",
  );
  assert.equal(
    (await cli(h.kv, ["deadletters", "list"])).stdout,
    "No dead letters\n",
  );
});

harnessTest(
  "deadletters replay goes on past a dead letter whose batch id is pending, names it and exits 1",
  async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    const first = await deadLetter(h, randomEntry({ projectId }));
    const held = await deadLetter(h, randomEntry({ projectId }));
    const last = await deadLetter(h, randomEntry({ projectId }));
    const dead = (await h.kv.get(deadLetterKey(held))).value as Uint8Array;
    await h.kv.set(pendingBatchKey(held), dead);
    const run = await cli(h.kv, ["deadletters", "replay", "--json"]);
    assert.equal(run.code, 1);
    const { replayed } = JSON.parse(run.stdout) as {
      replayed: { id: string }[];
    };
    assert.deepEqual(replayed.map((l) => l.id), [first, last]);
    assert.equal(
      run.stderr,
      `Cannot replay 1 dead letter(s): a batch with the same id is pending (${held})\n`,
    );
    const left = json(await cli(h.kv, ["deadletters", "list", "--json"]));
    assert.deepEqual(
      (left as unknown as { id: string }[]).map((l) => l.id),
      [held],
    );
  },
);
