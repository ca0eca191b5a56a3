/**
 * `deno task logs ID --query …` and how it combines with the other flags,
 * run in-process against an in-memory KV.
 *
 * @module
 */
import assert from "node:assert/strict";
import { cli } from "../_helpers/cli.ts";
import {
  kvTest,
  queryProject,
  recordAt,
  storeBatch,
  T0,
  withKv,
} from "../_helpers/query.ts";

async function logs(kv: Deno.Kv, args: string[]) {
  const { code, stdout, stderr } = await cli(kv, ["logs", ...args], {
    now: () => T0 + 3_600_000,
  });
  const lines = stdout.trim() === ""
    ? []
    : stdout.trim().split("\n").map((l) => JSON.parse(l));
  return { code, lines, stderr };
}

async function store(kv: Deno.Kv) {
  const projectId = await queryProject(kv);
  await storeBatch(kv, projectId, [
    recordAt(T0, {
      level: "error",
      data: { title: "Checkout failed", message: "Payment provider said 502" },
      context: { userId: "user_1" },
    }),
    recordAt(T0 + 1000, {
      level: "warning",
      data: { title: "Slow request", message: "GET /cart took 900 ms" },
      context: { userId: "user_2" },
    }),
    recordAt(T0 + 2000, {
      level: "info",
      data: { title: "Checkout done", message: "Order paid" },
      context: { userId: "user_1" },
    }),
  ]);
  return projectId;
}

Deno.test("logs --query filters with the query syntax and combines with the other flags", async (t) => {
  await withKv(async (kv) => {
    const projectId = await store(kv);
    const titles = async (...args: string[]) => {
      const run = await logs(kv, [projectId, "--json", ...args]);
      assert.equal(run.code, 0, run.stderr);
      return run.lines.map((l) => l.data.title);
    };
    await t.step("words, phrases and fields", async () => {
      assert.deepEqual(await titles("--query", "checkout"), [
        "Checkout failed",
        "Checkout done",
      ]);
      assert.deepEqual(await titles("-q", '"provider said"'), [
        "Checkout failed",
      ]);
      assert.deepEqual(
        await titles("--query", "context.userId:user_1 -level:error"),
        [
          "Checkout done",
        ],
      );
      assert.deepEqual(await titles("--query", "level>=warning"), [
        "Checkout failed",
        "Slow request",
      ]);
    });
    await t.step(
      "with --level, --grep, --where and --since (AND)",
      async () => {
        assert.deepEqual(
          await titles("--query", "checkout", "--level", "info"),
          ["Checkout done"],
        );
        assert.deepEqual(await titles("--query", "user_1", "--grep", "order"), [
          "Checkout done",
        ]);
        assert.deepEqual(
          await titles(
            "--query",
            "level>=warning",
            "--where",
            "context.userId=user_2",
          ),
          ["Slow request"],
        );
        assert.deepEqual(
          await titles(
            "--query",
            "checkout",
            "--since",
            "2026-01-01T00:00:01Z",
          ),
          ["Checkout done"],
        );
      },
    );
  });
});

kvTest(
  "logs refuses a malformed --query in one line naming the column",
  async (kv) => {
    const projectId = await store(kv);
    const run = await logs(kv, [projectId, "--query", 'level>=loud "x']);
    assert.equal(run.code, 2);
    assert.deepEqual(run.lines, []);
    assert.equal(
      run.stderr,
      `Cannot parse --query "level>=loud \\"x" at column 8: expected one of info, warning, error, critical after level>=\n`,
    );
  },
);

kvTest("logs says when more entries match than it printed", async (kv) => {
  const projectId = await store(kv);
  const some = await logs(kv, [projectId, "--json", "--limit", "2"]);
  assert.equal(some.lines.length, 2);
  assert.equal(
    some.stderr,
    "More entries match: showing the newest 2 (raise --limit, or narrow with --since and --until)\n",
  );
  const all = await logs(kv, [projectId, "--json", "--limit", "3"]);
  assert.equal(all.lines.length, 3);
  assert.equal(all.stderr, "");
});
