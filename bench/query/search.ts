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
 * to the answer), the results and what the scan read.
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
  },
});
if (values.store === undefined) {
  throw new Error('Cannot run: expected "--store FILE"');
}
const kv = await Deno.openKv(values.store);
const [project] = await listProjects(kv);
if (project === undefined) throw new Error("Cannot run: no project stored");
const began = performance.now();
const { filter, pipe } = parseSearch(values.query);
let results: number;
let stats: unknown;
if (pipe) {
  const answer = await aggregate(kv, project.id, { filter, pipe });
  results = answer.rows.length;
  stats = { ...answer.stats, partial: answer.searchedTo !== undefined };
} else {
  const page = await queryLogs(kv, project.id, { filter, limit: 100 });
  results = page.records.length;
  stats = page.stats;
}
const ms = performance.now() - began;
kv.close();
console.log(JSON.stringify({ query: values.query, ms, results, stats }));
