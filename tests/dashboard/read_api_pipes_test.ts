/**
 * The read API answers a query that ends with an aggregation with its rows:
 * NDJSON (the objects of `deno task logs --json`) or CSV (the same columns
 * as `--csv`), and `400` with the column for a malformed pipe.
 *
 * @module
 */
import assert from "node:assert/strict";
import { cli } from "../_helpers/cli.ts";
import {
  apiRequest,
  dashboardTest,
  type DashHarness,
  store,
} from "../_helpers/dashboard.ts";

async function token(h: DashHarness, projectId: string): Promise<string> {
  const run = await cli(h.kv, [
    "token",
    "create",
    projectId,
    "--name",
    "ci",
    "--json",
  ], { now: h.clock.now });
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout).token;
}

/** 24 entries: services api, web, worker and none in turn; every third an error. */
async function seeded(h: DashHarness) {
  const project = await h.project();
  const services = ["api", "web", "worker", undefined];
  await store(
    h,
    project.id,
    Array.from({ length: 24 }, (_, i) => ({
      level: i % 3 === 0 ? "error" : "info",
      data: { title: `Entry ${i}` },
      context: services[i % 4] ? { service: services[i % 4] } : {},
    })),
  );
  return { project, token: await token(h, project.id) };
}

async function get(
  h: DashHarness,
  projectId: string,
  token: string,
  params: Record<string, string>,
) {
  return await apiRequest(
    h,
    `/api/v1/projects/${projectId}/logs?${new URLSearchParams(params)}`,
    token,
  );
}

dashboardTest(
  "an aggregation answers the CLI's rows as NDJSON, and as CSV on request",
  async (h) => {
    const { project, token: bearer } = await seeded(h);
    for (
      const q of [
        "level:error | count by (time 1h, context.service)",
        "* | top 3 context.service",
        "* | uniq context.service",
        "* | count",
      ]
    ) {
      const res = await get(h, project.id, bearer, { q });
      assert.equal(res.status, 200);
      assert.equal(
        res.headers.get("content-type"),
        "application/x-ndjson; charset=utf-8",
      );
      assert.equal(res.headers.get("link"), null);
      const body = await res.text();
      const run = await cli(
        h.kv,
        ["logs", project.id, "--query", q, "--json"],
        {
          now: h.clock.now,
        },
      );
      assert.equal(run.code, 0, run.stderr);
      assert.equal(body, run.stdout, q);
      const csv = await get(h, project.id, bearer, { q, format: "csv" });
      assert.equal(
        csv.headers.get("content-type"),
        "text/csv; charset=utf-8; header=present",
      );
      const csvRun = await cli(h.kv, [
        "logs",
        project.id,
        "--query",
        q,
        "--csv",
      ], {
        now: h.clock.now,
      });
      assert.equal(await csv.text(), csvRun.stdout, q);
    }
    const errors = await get(h, project.id, bearer, {
      q: "level:error | count by context.service",
    });
    assert.deepEqual(
      (await errors.text()).trim().split("\n").map((l) => JSON.parse(l)),
      [
        { "context.service": "api", count: 2 },
        { "context.service": "web", count: 2 },
        { "context.service": "worker", count: 2 },
        { "context.service": null, count: 2 },
      ],
    );
    const uniq = await get(h, project.id, bearer, {
      q: "* | uniq context.service",
    });
    assert.equal(await uniq.text(), '{"count":4}\n');
  },
);

dashboardTest("a malformed pipe answers 400 naming the column", async (h) => {
  const { project, token: bearer } = await seeded(h);
  const res = await get(h, project.id, bearer, { q: "* | top 5000 level" });
  assert.equal(res.status, 400);
  assert.deepEqual(await res.json(), {
    error:
      'Cannot parse "q" at column 9: expected a number from 1 to 1000 after top',
  });
});
