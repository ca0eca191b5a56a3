/**
 * Facets: the top values of several fields in one read, over entries with
 * known counts per service, level and status: counts and shares, `null`
 * for a missing field, a field with too many values said so, and the
 * partial answer when the time budget runs out.
 *
 * @module
 */
import assert from "node:assert/strict";
import { facets, parseSearch } from "../../../db/query/mod.ts";
import { WIDE_LINE_CHARS } from "../../../db/query/columnar.ts";
import { encodeRecordLine } from "../../../db/storage/lines.ts";
import { storeLogs } from "../../../db/storage/write.ts";
import { HOUR, kvTest, T0 } from "../../_helpers/query.ts";
import { queryProject, recordAt } from "../../_helpers/query.ts";
import {
  countsBy,
  PIPE_RECORDS,
  pipeRecordsTest,
  serviceOf,
  severe,
} from "../../_helpers/pipes.ts";

pipeRecordsTest(
  "facets count the top values of each field in one read, with shares",
  async (kv, projectId) => {
    const { filter } = parseSearch("level>=error");
    const answer = await facets(kv, projectId, {
      filter,
      fields: ["context.service", "level", "data.status"],
      top: 3,
    });
    const matching = PIPE_RECORDS.filter(severe).length;
    assert.equal(answer.total, matching);
    assert.equal(answer.searchedTo, undefined);
    const [service, level, status] = answer.facets;
    assert.deepEqual(
      service!.values.map((v) => [v.value, v.count]),
      countsBy(severe, serviceOf).slice(0, 3),
    );
    assert.equal(service!.distinct, countsBy(severe, serviceOf).length);
    assert.deepEqual(
      level!.values.map((v) => [v.value, v.count, v.share]),
      countsBy(severe, (r) => r.level).map(([l, n]) => [l, n, n / matching]),
    );
    assert.deepEqual(
      status!.values.map((v) => [v.value, v.count]),
      countsBy(severe, (r) => r.data.status as number),
    );
  },
);

pipeRecordsTest(
  "a facet with more distinct values than its bound says so instead of counting them",
  async (kv, projectId) => {
    const answer = await facets(kv, projectId, {
      fields: ["context.userId", "context.service"],
      maxDistinct: 4,
    });
    const [users, services] = answer.facets;
    // Five users: past the bound of four.
    assert.equal(users!.tooMany, true);
    assert.deepEqual(users!.values, []);
    // api, web, worker and null: within it.
    assert.equal(services!.tooMany, false);
    assert.equal(services!.values.length, 4);
    assert.equal(answer.total, PIPE_RECORDS.length);
  },
);

pipeRecordsTest(
  "facets that run out of time answer what they counted and how far back",
  async (kv, projectId) => {
    let now = 0;
    const answer = await facets(kv, projectId, {
      fields: ["level"],
      budget: { ms: 1000, clock: () => (now += 1500) },
    });
    assert.ok(answer.searchedTo !== undefined, "partial");
    assert.ok(answer.searchedTo > T0 && answer.searchedTo <= T0 + 4 * HOUR);
    const counted =
      PIPE_RECORDS.filter((r) => r.receivedAt >= answer.searchedTo!).length;
    assert.equal(answer.total, counted);
    assert.ok(counted < PIPE_RECORDS.length && counted > 0);
  },
);

kvTest(
  "facets over the lines of wide entries count as over narrow ones, by their members alone or with words",
  async (kv) => {
    const projectId = await queryProject(kv);
    const wide = Object.fromEntries(
      Array.from({ length: 600 }, (_, i) => [`k${i}`, `value "${i}" {x}`]),
    );
    const records = Array.from(
      { length: 30 },
      (_, i) =>
        recordAt(T0 + i * 1000, {
          level: i % 3 === 0 ? "error" : "info",
          data: { title: i % 2 ? "odd one" : "even one", ...wide },
          context: { service: `svc${i % 4}`, userId: `u${i}` },
        }),
    );
    const op = kv.atomic();
    // No columns: the facets read the lines.
    storeLogs(op, projectId, records, { now: T0 + HOUR, retentionMs: HOUR });
    assert.ok((await op.commit()).ok);
    assert.ok(encodeRecordLine(records[0]!).length > WIDE_LINE_CHARS);
    for (const search of ["level:error", "context.userId:u3", "odd"]) {
      const { filter } = parseSearch(search);
      const answer = await facets(kv, projectId, {
        filter,
        fields: ["context.service", "level"],
        since: T0,
      });
      const matching = records.filter((r) =>
        search === "level:error"
          ? r.level === "error"
          : search === "odd"
          ? r.data.title === "odd one"
          : r.context.userId === "u3"
      );
      assert.equal(answer.total, matching.length, search);
      const counts = new Map<string, number>();
      for (const r of matching) {
        const s = String(r.context.service);
        counts.set(s, (counts.get(s) ?? 0) + 1);
      }
      assert.deepEqual(
        Object.fromEntries(
          answer.facets[0]!.values.map((v) => [v.value, v.count]),
        ),
        Object.fromEntries(
          [...counts].sort((a, b) => b[1] - a[1]).slice(0, 5),
        ),
        search,
      );
    }
  },
);
