/**
 * `deno task deadletters`: listing the batches that kept failing and
 * handing them back to the sweeper, run in-process against an in-memory KV.
 *
 * @module
 */
import assert from "node:assert/strict";
import { MAX_ATTEMPTS } from "../../queue/dead_letters.ts";
import { deadLetter, harnessTest, randomEntry } from "../_helpers/harness.ts";
import { assertRefused, cli, create, json } from "../_helpers/cli.ts";

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
