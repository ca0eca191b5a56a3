/**
 * `deno task logs ID --query 'Q | …'`: an aggregation's rows as an aligned
 * table, as NDJSON with `--json` and as CSV with `--csv`, sender text
 * printed inert, partial answers said on stderr, and misuse refused.
 *
 * @module
 */
import assert from "node:assert/strict";
import { cli } from "../_helpers/cli.ts";
import { recordAt, storeBatch, T0 } from "../_helpers/query.ts";
import {
  countsBy,
  PIPE_RECORDS,
  pipeRecordsTest,
  serviceOf,
  SEVERE_BY_HOUR,
  severeByHour,
} from "../_helpers/pipes.ts";

function logs(kv: Deno.Kv, args: string[], now = () => T0 + 86_400_000) {
  return cli(kv, ["logs", ...args], { now });
}

/** `logs PROJECT --query QUERY` with `flags`, a day after the fixture. */
function logsQuery(
  kv: Deno.Kv,
  projectId: string,
  query: string,
  ...flags: string[]
) {
  return logs(kv, [projectId, "--query", query, ...flags]);
}

pipeRecordsTest(
  "--json prints one object per row: the fields' paths, time and count",
  async (kv, projectId) => {
    const run = await logsQuery(kv, projectId, SEVERE_BY_HOUR, "--json");
    assert.equal(run.code, 0, run.stderr);
    const rows = run.stdout.trim().split("\n").map((l) => JSON.parse(l));
    const expected = severeByHour();
    const text = (list: unknown[]) => list.map((r) => JSON.stringify(r)).sort();
    assert.deepEqual(text(rows), text(expected));
    assert.deepEqual(Object.keys(rows[0]), [
      "time",
      "context.service",
      "count",
    ]);
    assert.equal(run.stderr, "");
  },
);

pipeRecordsTest(
  "--csv prints the same rows as CSV under a header",
  async (kv, projectId) => {
    const run = await logsQuery(
      kv,
      projectId,
      "* | top 2 context.userId",
      "--csv",
    );
    assert.equal(run.code, 0, run.stderr);
    const total = PIPE_RECORDS.length;
    const top = countsBy(() => true, (r) => r.context.userId as string);
    assert.equal(
      run.stdout,
      "context.userId,count,share\r\n" +
        top.slice(0, 2).map(([user, n]) =>
          `${user},${n},${Math.round(n / total * 1e6) / 1e6}\r\n`
        ).join(""),
    );
  },
);

pipeRecordsTest(
  "the table is aligned, shows null for a missing value and shares as percentages",
  async (kv, projectId) => {
    const run = await logsQuery(
      kv,
      projectId,
      "level:info | top 4 context.service",
    );
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.trimEnd().split("\n");
    assert.match(lines[0]!, /^context\.service {2,}count {2,}share$/);
    const info = PIPE_RECORDS.filter((r) => r.level === "info").length;
    const expected = countsBy((r) => r.level === "info", serviceOf);
    assert.equal(lines.length, 1 + expected.length);
    expected.forEach(([service, n], i) => {
      const cells = lines[i + 1]!.split(/ {2,}/);
      assert.deepEqual(cells, [
        service ?? "null",
        String(n),
        `${(n / info * 100).toFixed(1)}%`,
      ]);
    });
    const at = lines[0]!.indexOf("count");
    for (const line of lines) {
      assert.ok(line[at - 1] === " " && line[at] !== " ", `aligned: ${line}`);
    }
    const counted = await logsQuery(kv, projectId, "* | uniq context.userId");
    assert.equal(counted.stdout, "count\n5\n");
  },
);

pipeRecordsTest(
  "sender text in a value is printed inert in the table, and in CSV to a terminal",
  async (kv, projectId) => {
    await storeBatch(kv, projectId, [
      recordAt(T0 + 5 * 3_600_000, { context: { service: "\u001b[2Jevil" } }),
    ]);
    const run = await logsQuery(
      kv,
      projectId,
      "context.service:* | count by context.service",
    );
    assert.equal(run.code, 0, run.stderr);
    assert.ok(!run.stdout.includes("\u001b"), "no escape reaches the terminal");
    assert.match(run.stdout, /\\u\{1b\}\[2Jevil +1/);
    const json = await logsQuery(
      kv,
      projectId,
      "context.service:* | count by context.service",
      "--json",
    );
    assert.ok(json.stdout.includes('"context.service":"\\u001b[2Jevil"'));
    const args = [
      projectId,
      "--query",
      "context.service:* | count by context.service",
      "--csv",
    ];
    const shown = await cli(kv, ["logs", ...args], { isTerminal: true });
    assert.equal(shown.code, 0, shown.stderr);
    assert.ok(!shown.stdout.includes("\u001b"), "none in CSV to a terminal");
    assert.match(shown.stdout, /^\\u\{1b\}\[2Jevil,1\r$/m);
    const piped = await cli(kv, ["logs", ...args]);
    assert.ok(
      piped.stdout.includes("\n\u001b[2Jevil,1\r\n"),
      "to a pipe as stored",
    );
  },
);

pipeRecordsTest(
  "an aggregation cut short by its time budget says how far back it searched",
  async (kv, projectId) => {
    let now = T0 + 86_400_000;
    const run = await logs(
      kv,
      [projectId, "--query", "context.userId:* | count", "--json"],
      () => (now += 1500),
    );
    assert.equal(run.code, 0, run.stderr);
    const [row] = run.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.ok(row.count > 0 && row.count < PIPE_RECORDS.length);
    assert.match(
      run.stderr,
      /^Partial, searched back to 2026-01-01 0\d:\d\d:\d\dZ: the time budget ran out/,
    );
  },
);

pipeRecordsTest(
  "a bad pipe or a flag that does not fit is refused",
  async (kv, projectId) => {
    const cases: [string[], RegExp][] = [
      [
        ["--query", "* | count by (time 2h)"],
        /Cannot parse --query "\* \| count by \(time 2h\)" at column 20: expected a bucket after time/,
      ],
      [
        ["--query", "* | count", "--follow"],
        /Cannot use --follow with an aggregation/,
      ],
      [
        ["--query", "* | count", "--limit", "5"],
        /Cannot use --limit with an aggregation/,
      ],
      [
        ["--query", "* | count", "--json", "--csv"],
        /Cannot use --json with --csv/,
      ],
      [["--csv"], /Cannot use --csv without an aggregation/],
    ];
    for (const [args, message] of cases) {
      const run = await logs(kv, [projectId, ...args]);
      assert.equal(run.code, 2, args.join(" "));
      assert.match(run.stderr, message);
      assert.equal(run.stdout, "");
    }
  },
);
