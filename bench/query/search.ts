/**
 * One query on a store kept by `deno task bench:query --keep FILE`, timed
 * in a fresh process: for paired runs of two builds over the same store
 * (each build reads it as its code does), whole process against whole
 * process. A pipe (`… | count by …`) is answered as the explorer does, a
 * search as its first page (100 entries).
 *
 * ```sh
 * deno run --allow-read --allow-write --allow-env bench/query/search.ts \
 *   --store data/bench-1m.sqlite --query zanzibarquokka
 * ```
 *
 * Prints one JSON line: the query, its milliseconds (from the open store
 * to the answer), the results and what the scan read. With `--runs N` it
 * answers N times in the same process and gives each run's milliseconds
 * too (`runs`; `ms` is the first).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { aggregate, parseSearch, queryLogs } from "../../db/query/mod.ts";
import { listProjects } from "../../db/projects.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    store: { type: "string" },
    query: { type: "string", default: "" },
    runs: { type: "string", default: "1" },
  },
});
if (values.store === undefined) {
  throw new Error('Cannot run: expected "--store FILE"');
}
const kv = await Deno.openKv(values.store);
const [project] = await listProjects(kv);
if (project === undefined) throw new Error("Cannot run: no project stored");
const runs = Math.max(1, Number(values.runs) || 1);
const times: number[] = [];
let results = 0;
let stats: unknown;
for (let run = 0; run < runs; run++) {
  const began = performance.now();
  const { filter, pipe } = parseSearch(values.query);
  if (pipe) {
    const answer = await aggregate(kv, project.id, { filter, pipe });
    results = answer.rows.length;
    stats = { ...answer.stats, partial: answer.searchedTo !== undefined };
  } else {
    const page = await queryLogs(kv, project.id, { filter, limit: 100 });
    results = page.records.length;
    stats = page.stats;
  }
  times.push(performance.now() - began);
}
const ms = times[0];
kv.close();
console.log(JSON.stringify({
  query: values.query,
  ms,
  ...(runs > 1 ? { runs: times } : {}),
  results,
  stats,
}));
