/**
 * The error group's page and the errors list with 10,000 groups in the
 * project (docs/explorer.md#an-error-groups-page): stores one entry for each
 * of 10,000 groups and 5,000 entries of one group (with users,
 * environments, releases) over 14 days, then, after the merger's rounds, times
 * `readGroupDetail` (the page's reading) and `listGroups` +
 * `readGroupUsers` (the list's). Not run by `deno task test`:
 * `deno run -A bench/error_group_page.ts`.
 *
 * @module
 */
import { readGroupDetail, readGroupUsers } from "../db/error_group_detail.ts";
import { prepareErrorGroups } from "../db/error_groups.ts";
import { listGroups } from "../db/error_group_reads.ts";
import { createProject } from "../db/projects.ts";
import { mergeProject } from "../db/storage/merge.ts";
import { DAY_MS, type LogRecord } from "../domain/entry.ts";
import { fingerprintOf } from "../domain/fingerprint.ts";
import { createId } from "../domain/ids.ts";
import { acceptEntries } from "../queue/accept.ts";

const GROUPS = 10_000;
const ENTRIES = 5_000;

function record(at: number, data: Record<string, unknown>, context = {}) {
  return {
    id: createId(at),
    receivedAt: at,
    level: "error",
    data,
    device: {},
    context,
    auth: "origin",
    origin: "https://app.example.com",
  } satisfies LogRecord;
}

const kv = await Deno.openKv(":memory:");
const project = await createProject(kv, { name: "bench" });
const now = Date.UTC(2026, 0, 15);
const start = now - 14 * DAY_MS;
const retentionMs = project.retentionDays * DAY_MS;

async function commit(records: LogRecord[], at: number) {
  const groups = await prepareErrorGroups(kv, project.id, records, {
    now: at,
    retentionMs,
  });
  const op = kv.atomic();
  acceptEntries(op, project, records, { now: at, groups });
  if (!(await op.commit()).ok) throw new Error("commit failed");
}

const letters = (n: number) =>
  n.toString(26).replace(/\d/g, (d) => "qrstuvwxyz"[+d]!);
for (let i = 0; i < GROUPS; i += 20) {
  const batch: LogRecord[] = [];
  for (let j = i; j < i + 20; j++) {
    const at = start + Math.floor((j / GROUPS) * 14 * DAY_MS);
    batch.push(record(at, { title: `Ground ${letters(j)}` }));
  }
  await commit(batch, batch[0]!.receivedAt);
}
const data = {
  title: "Payment 1 failed",
  stack: "Error: x\n    at pay (app.js:1:2)",
};
for (let i = 0; i < ENTRIES; i += 250) {
  const batch: LogRecord[] = [];
  for (let j = i; j < i + 250; j++) {
    const at = start + Math.floor((j / ENTRIES) * 14 * DAY_MS) + 1;
    batch.push(record(at, data, {
      userId: `u${j % 700}`,
      environment: j % 3 ? "production" : "staging",
      release: `1.${Math.floor(j / 500)}`,
    }));
  }
  await commit(batch, batch[0]!.receivedAt);
}
// The merger's rounds, as a running service makes them.
for (let round = 0; round < 200; round++) {
  const done = await mergeProject(kv, project.id, { now });
  if (done.merges === 0) break;
}
const fp = fingerprintOf({ data }).fingerprint;

async function time(label: string, fn: () => Promise<unknown>) {
  const times: number[] = [];
  let last: unknown;
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    last = await fn();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  console.log(
    `${label}: median ${times[2]!.toFixed(0)} ms, max ${
      times[4]!.toFixed(0)
    } ms`,
  );
  return last;
}

const detail = await time(
  "group page reading (readGroupDetail)",
  () => readGroupDetail(kv, project.id, fp, { now }),
) as Awaited<
  ReturnType<typeof readGroupDetail>
>;
console.log(
  `  entries ${detail.total}, users ${detail.users}, partial ${
    detail.searchedTo !== undefined
  }, count ${detail.group?.count}`,
);
await time(
  "errors list: listGroups 101",
  () => listGroups(kv, project.id, now, { limit: 101, retentionMs }),
);
const page = await listGroups(kv, project.id, now, { limit: 100, retentionMs });
const users = await time(
  "errors list: readGroupUsers of 100 groups",
  () => readGroupUsers(kv, project.id, page, {}),
) as Awaited<
  ReturnType<typeof readGroupUsers>
>;
console.log(
  `  partial ${
    users.searchedTo !== undefined
  }, groups with users ${users.users.size}`,
);
kv.close();
