/**
 * Aggregations and facets from chunk columns (db/query/columnar.ts): the
 * same exact answers as from lines, given by the columns alone where they
 * answer, by the lines of a chunk written without columns, 502 apart from
 * "502", facets with counts, shares and the flag of too many values, and
 * `InexactReadError` when merges keep moving what was read.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { LogRecord } from "../../../domain/entry.ts";
import {
  aggregate,
  facets,
  InexactReadError,
  parseQuery,
  parseSearch,
} from "../../../db/query/mod.ts";
import { logChunksPrefix, logColumnsPrefix } from "../../../db/keys.ts";
import { buildChunk } from "../../../db/storage/chunk.ts";
import { encodeRecordLine } from "../../../db/storage/lines.ts";
import { setChunk } from "../../../db/storage/write.ts";
import {
  HOUR,
  kvTest,
  queryProject,
  recordAt,
  T0,
} from "../../_helpers/query.ts";
import {
  countsBy,
  PIPE_RECORDS,
  pipeRecordsTest,
  serviceOf,
  SEVERE_BY_HOUR,
  severeByHour,
} from "../../_helpers/pipes.ts";

async function rows(kv: Deno.Kv, projectId: string, query: string) {
  const { filter, pipe } = parseSearch(query);
  return (await aggregate(kv, projectId, { filter, pipe: pipe! })).rows;
}

/** The answers the fixture must give, counted from its records. */
function expected() {
  return {
    severe: severeByHour().map((r) => [
      `${r.time} ${r["context.service"]}`,
      r.count,
    ]),
    users: countsBy(() => true, (r) => r.context.userId as string),
  };
}

/** Runs the queries the columns answer and checks them. */
async function checkAnswers(kv: Deno.Kv, projectId: string) {
  const { severe: bySevere, users } = expected();
  const counted = await rows(kv, projectId, SEVERE_BY_HOUR);
  assert.deepEqual(
    counted.map((r) => [`${r.time} ${r["context.service"]}`, r.count]).sort(),
    bySevere.map(([k, n]) => [k, n]).sort(),
  );
  assert.deepEqual(
    (await rows(kv, projectId, "* | top 3 context.userId")).map((r) => [
      r["context.userId"],
      r.count,
    ]),
    users.slice(0, 3),
  );
  assert.deepEqual(await rows(kv, projectId, "* | uniq context.userId"), [{
    count: users.length,
  }]);
  assert.deepEqual(
    await rows(kv, projectId, "context.service:api data.status:502 | count"),
    [{
      count: PIPE_RECORDS.filter((r) =>
        r.context.service === "api" && r.data.status === 502
      ).length,
    }],
  );
}

pipeRecordsTest(
  "aggregations are answered by the columns alone",
  async (kv, projectId) => {
    // Without their lines, only the columns can answer.
    for await (const e of kv.list({ prefix: logChunksPrefix(projectId) })) {
      await kv.delete(e.key);
    }
    await checkAnswers(kv, projectId);
  },
);

kvTest(
  "chunks written without columns are answered from their lines",
  async (kv) => {
    const projectId = await queryProject(kv);
    const sorted = [...PIPE_RECORDS].sort((a, b) => a.id < b.id ? -1 : 1);
    // The first two hours as written before columns, the rest with them.
    for (
      const [from, to, columns] of [[0, 36, false], [36, 58, true]] as const
    ) {
      const run = sorted.slice(from, to);
      const chunk = buildChunk(run.map(encodeRecordLine), {
        records: run,
        columns,
      });
      const op = kv.atomic();
      setChunk(op, projectId, chunk, { expireIn: HOUR * 24 });
      assert.ok((await op.commit()).ok);
    }
    assert.equal(sorted.length, 58);
    const columns = await Array.fromAsync(
      kv.list({ prefix: logColumnsPrefix(projectId) }),
    );
    assert.equal(columns.length, 1);
    await checkAnswers(kv, projectId);
  },
);

kvTest(
  '502 and "502" are counted apart, and both match data.status:502',
  async (kv) => {
    const projectId = await queryProject(kv);
    const records: LogRecord[] = [502, "502", 502, null].map((status, i) =>
      recordAt(T0 + i * 1000, { data: { title: "t", status } })
    );
    const op = kv.atomic();
    setChunk(
      op,
      projectId,
      buildChunk(records.map(encodeRecordLine), { records }),
      {
        expireIn: HOUR,
      },
    );
    await op.commit();
    assert.deepEqual(await rows(kv, projectId, "* | count by data.status"), [
      { "data.status": 502, count: 2 },
      { "data.status": "502", count: 1 },
      { "data.status": null, count: 1 },
    ]);
    assert.deepEqual(await rows(kv, projectId, "data.status:502 | count"), [
      { count: 3 },
    ]);
  },
);

pipeRecordsTest(
  "facets count the values of each field with their shares",
  async (kv, projectId) => {
    const answer = await facets(kv, projectId, {
      filter: parseQuery("level:info"),
      fields: ["level", "context.service", "data.title"],
      top: 2,
      maxDistinct: 20,
    });
    const info = PIPE_RECORDS.filter((r) => r.level === "info");
    assert.equal(answer.total, info.length);
    assert.deepEqual(answer.facets[0], {
      field: "level",
      values: [{ value: "info", count: info.length, share: 1 }],
      distinct: 1,
      tooMany: false,
    });
    const services = countsBy((r) => r.level === "info", serviceOf);
    assert.deepEqual(
      answer.facets[1]!.values,
      services.slice(0, 2).map(([value, count]) => ({
        value,
        count,
        share: count / info.length,
      })),
    );
    assert.equal(answer.facets[1]!.distinct, services.length);
    assert.equal(answer.facets[1]!.tooMany, false);
    // Every title differs: more than 20 of them.
    assert.equal(answer.facets[2]!.tooMany, true);
    assert.equal(answer.facets[2]!.distinct, 20);
  },
);

pipeRecordsTest(
  "an aggregation from columns that merges keep moving throws",
  async (kv, projectId) => {
    let reads = 0;
    // Every chunk's columns and summary are written again once read.
    const racing = new Proxy(kv, {
      get(target, key) {
        const value = Reflect.get(target, key, target);
        if (key !== "list") {
          return typeof value === "function" ? value.bind(target) : value;
        }
        return (selector: Deno.KvListSelector, options?: Deno.KvListOptions) =>
          (async function* () {
            for await (const e of target.list(selector, options)) {
              yield e;
              if (e.key[0] !== "log_columns") continue;
              reads++;
              // Written again, as a merge writes a chunk: with its summary.
              const summary = ["log_summaries", ...e.key.slice(1)];
              const before = await target.get(summary);
              await target.atomic().set(e.key, e.value)
                .set(summary, before.value).commit();
            }
          })();
      },
    });
    const { filter, pipe } = parseSearch("* | top 3 context.userId");
    await assert.rejects(
      aggregate(racing, projectId, { filter, pipe: pipe! }),
      InexactReadError,
    );
    assert.ok(reads > 0);
  },
);
