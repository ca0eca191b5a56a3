/**
 * Dashboard benchmark: the server time of every dashboard page and every
 * explorer query on the query benchmark's store (1,000,000 entries of one
 * project over 7 days), measured in process with `app.request` from the
 * request to the last byte of the answer: no network, no browser.
 *
 * Build the store once, then run this against it:
 *
 * ```sh
 * deno task bench:query --keep data/bench-1m.sqlite   # about 2 minutes
 * deno task bench:dashboard                           # --store data/bench-1m.sqlite
 * deno task bench:dashboard --json                    # machine-readable
 * ```
 *
 * The dashboard's clock is set one minute after the store's newest entry,
 * so "the last 24 h" holds the store's last day. When the project has no
 * kept rejected entries yet, 100 rejected entries (wrong origin, unknown app
 * id, bad signature) are sent through the real pipeline first, so that the
 * rejections page has its full ring to show; the store keeps them. Each
 * request runs once ("first", the handle fresh) and then 5 more times
 * ("median"). Progress goes to stderr, the report to stdout.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { createDashboard } from "../dashboard/app.ts";
import { listProjects } from "../db/projects.ts";
import { listRejected } from "../db/rejected.ts";
import { getEntry, queryLogs } from "../db/query/mod.ts";
import type { QueuedEntry } from "../domain/entry.ts";
import { createId } from "../domain/ids.ts";
import { createPipeline } from "../queue/pipeline.ts";
import { timeRuns } from "./timing.ts";

const PASSWORD = "dashboard benchmark";
const PEER = {
  remoteAddr: { transport: "tcp" as const, hostname: "127.0.0.1", port: 1 },
};
const SAME_ORIGIN = {
  origin: "http://localhost",
  "sec-fetch-site": "same-origin",
};

/** One timed request. */
interface Timed {
  name: string;
  path: string;
  firstMs: number;
  medianMs: number;
  bytes: number;
  note: string;
}

function cookiesOf(res: Response): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of res.headers.getSetCookie()) {
    const [pair = ""] = line.split(";");
    const eq = pair.indexOf("=");
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

function csrfOf(html: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!match) throw new Error("Cannot sign in: expected a form with _csrf");
  return match[1]!;
}

/**
 * Signs in through the form with `password` (the dashboard's
 * `ADMIN_PASSWORD`); returns the session cookie.
 */
export async function signIn(
  app: ReturnType<typeof createDashboard>,
  password = PASSWORD,
): Promise<string> {
  const form = await app.request("/login", {}, PEER);
  const token = cookiesOf(form)["dash_login"];
  const res = await app.request("/login", {
    method: "POST",
    headers: { cookie: `dash_login=${token}`, ...SAME_ORIGIN },
    body: new URLSearchParams({
      _csrf: csrfOf(await form.text()),
      password,
      next: "/",
    }),
  }, PEER);
  const session = cookiesOf(res)["dash_session"];
  if (res.status !== 303 || session === undefined) {
    throw new Error(`Cannot sign in: answered ${res.status}`);
  }
  return `dash_session=${session}`;
}

/**
 * Sends 100 rejected entries of the project through the real pipeline, in
 * the hour before `now`: wrong origins, unknown app ids, bad signatures.
 */
async function sendRejected(
  kv: Deno.Kv,
  projectId: string,
  now: number,
): Promise<void> {
  let t = now - 3_600_000;
  const pipeline = createPipeline({
    kv,
    now: () => t,
    config: {
      consumerConcurrency: 1,
      maxPendingRequests: 1000,
      projectCacheMs: 2000,
      signatureMaxSkewMs: 300_000,
    },
  });
  for (let i = 0; i < 100; i++) {
    t += 30_000;
    const entry: QueuedEntry = {
      id: createId(t),
      receivedAt: t,
      projectId,
      level: i % 4 === 0 ? "error" : "info",
      data: { title: "Checkout opened", orderId: 1000 + i },
      context: { userId: `user_${i}`, environment: "production" },
      device: { type: "desktop", os: "macOS 15", browser: "Safari 18" },
    };
    if (i % 3 === 0) entry.origin = `https://shop-${i % 7}.example.org`;
    else if (i % 3 === 1) entry.appid = "com.example.unknown";
    else {
      entry.timestamp = String(t);
      entry.signature = "0123456789ABCDEF".repeat(4);
    }
    await pipeline.producer.submit(entry);
  }
  await pipeline.worker.idle();
  await pipeline.stop();
}

const log = (line: string) => console.error(line);

/** The command line. */
function parseOptions(args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      store: { type: "string", default: "data/bench-1m.sqlite" },
      runs: { type: "string", default: "5" },
      json: { type: "boolean", default: false },
    },
  });
  return { store: values.store, runs: Number(values.runs), json: values.json };
}

/**
 * The entries the requests point at: the newest (its time plus a minute is
 * the clock), the middle of the 7 days, one three days back, the one 190
 * rows down, and the second page of the last 24 hours. Sends 100 rejected
 * entries first when the store has none.
 */
async function landmarks(kv: Deno.Kv, id: string) {
  const newest = (await queryLogs(kv, id, { limit: 1 })).records[0]!;
  const now = newest.receivedAt + 60_000;
  if ((await listRejected(kv, id, { limit: 1 })).length === 0) {
    log("Sending 100 rejected entries through the pipeline");
    await sendRejected(kv, id, now);
  }
  // The oldest and newest entries: the middle of the 7 days, and an
  // entry three days back.
  const oldest = (await queryLogs(kv, id, { order: "oldest", limit: 1 }))
    .records[0]!;
  const middleAt = (oldest.receivedAt + newest.receivedAt) / 2;
  const at = async (ms: number) =>
    (await queryLogs(kv, id, { filter: { until: ms }, limit: 1 }))
      .records[0]!;
  const middle = await at(middleAt);
  const older = await at(now - 3 * 86_400_000);
  const second = await queryLogs(kv, id, {
    filter: { since: now - 86_400_000 },
    limit: 50,
  });
  const fourth = (await queryLogs(kv, id, {
    filter: { since: now - 86_400_000 },
    limit: 190,
  })).records.at(-1)!;
  if ((await getEntry(kv, id, older.id)) === null) {
    throw new Error("Cannot find the entry three days back");
  }
  return { now, newest, middleAt, middle, older, second, fourth };
}

/** The requests timed, by name, for the project `id`. */
function requests(
  id: string,
  marks: Awaited<ReturnType<typeof landmarks>>,
): [string, string][] {
  const { middle, newest, older, fourth } = marks;
  const user = String(middle.context.userId);
  const hour = Math.floor(marks.middleAt / 3_600_000) * 3_600_000;
  const utc = (ms: number) => new Date(ms).toISOString();
  const p = `/projects/${id}`;
  return [
    ["projects page", "/"],
    ["explorer: newest (24 h, histogram)", p],
    ["explorer: newest, 7 d", `${p}?range=7d`],
    ["explorer: level chip error", `${p}?level=error`],
    ["explorer: level chip critical, 7 d", `${p}?level=critical&range=7d`],
    ["explorer: level>=warning, 7 d", `${p}?q=level%3E%3Dwarning&range=7d`],
    ["explorer: a common word (checkout), 24 h", `${p}?q=checkout`],
    ["explorer: a common word (checkout), 7 d", `${p}?q=checkout&range=7d`],
    ["explorer: a word (timeout), 24 h", `${p}?q=timeout`],
    ["explorer: a word in one entry, 7 d", `${p}?q=zanzibarquokka&range=7d`],
    ["explorer: a word in none, 7 d", `${p}?q=xylophonewombat&range=7d`],
    [
      `explorer: field context.userId:${user}, 7 d`,
      `${p}?q=context.userId%3A${user}&range=7d`,
    ],
    [
      "explorer: field data.status:503, 24 h",
      `${p}?q=data.status%3A503`,
    ],
    ["explorer: last 1 h", `${p}?range=1h`],
    [
      "explorer: one hour in the middle",
      `${p}?since=${utc(hour)}&until=${utc(hour + 3_600_000)}`,
    ],
    ["explorer: show in context", `${p}?around=${middle.id}`],
    ["explorer: permalink, newest page", `${p}?open=${newest.id}`],
    ["explorer: permalink, 190 rows down", `${p}?open=${fourth.id}`],
    ["explorer: permalink, 3 days back", `${p}?range=7d&open=${older.id}`],
    [
      "explorer: next page (scrolling)",
      `${p}/entries?cursor=${marks.second.cursor}`,
    ],
    [
      "explorer: pipe count by (time 1h, level), 24 h",
      `${p}?q=${encodeURIComponent("* | count by (time 1h, level)")}`,
    ],
    [
      "explorer: pipe top 10 context.userId, 24 h",
      `${p}?q=${encodeURIComponent("* | top 10 context.userId")}`,
    ],
    ["explorer: histogram split by data.status", `${p}?split=data.status`],
    ["settings", `${p}/settings`],
    ["rejections", `${p}/rejections`],
    ["dead letters", "/dead-letters"],
  ];
}

/** What an explorer page shows: its rows, and its histogram's bars. */
function shown(name: string, body: string): string {
  if (!name.startsWith("explorer")) return "";
  const rows = body.match(/<details class="entry/g)?.length ?? 0;
  const bars = body.match(/class="bucket/g)?.length ?? 0;
  const uncounted = body.match(/class="bucket uncounted"/g)?.length ?? 0;
  const chart = bars === 0
    ? ""
    : uncounted === 0
    ? `, ${bars} bars`
    : `, ${bars - uncounted} of ${bars} bars counted`;
  const facets = body.includes('class="facets"')
    ? body.match(/Counted back to ([^<]*) UTC/)?.[1]
    : undefined;
  const counted = facets === undefined ? "" : `, facets back to ${facets}`;
  return `${rows} rows${chart}${counted}`;
}

/** Requests `path` once, then `runs` more times for the median. */
async function timeRequest(
  app: ReturnType<typeof createDashboard>,
  cookie: string,
  [name, path]: [string, string],
  runs: number,
): Promise<Timed> {
  const once = async () => {
    const res = await app.request(path, { headers: { cookie } }, PEER);
    const body = await res.text();
    if (res.status !== 200) {
      throw new Error(`Cannot bench "${path}": answered ${res.status}`);
    }
    return body;
  };
  const { first, firstMs, medianMs } = await timeRuns(once, runs);
  log(`  ${name}: ${firstMs.toFixed(1)} ms`);
  return {
    name,
    path,
    firstMs,
    medianMs,
    bytes: first.length,
    note: shown(name, first),
  };
}

/** The results as a Markdown table, on stdout. */
function printTable(load: number[], runs: number, results: Timed[]): void {
  const f = (n: number) => n.toFixed(1);
  console.log(
    `Load average (1 min) ${
      load.map((n) => n.toFixed(2)).join(" → ")
    }, ${navigator.hardwareConcurrency} cores, Deno ${Deno.version.deno}\n`,
  );
  console.log(
    `| request | first | median of ${runs} | HTML | shown |\n|---|---|---|---|---|`,
  );
  for (const r of results) {
    console.log(
      `| ${r.name} | ${f(r.firstMs)} ms | ${f(r.medianMs)} ms | ${
        Math.round(r.bytes / 1024)
      } KiB | ${r.note} |`,
    );
  }
}

async function main(): Promise<void> {
  const options = parseOptions(Deno.args);
  try {
    await Deno.stat(options.store);
  } catch {
    throw new Error(
      `Cannot open the store "${options.store}": build it with deno task bench:query --keep ${options.store}`,
    );
  }
  const kv = await Deno.openKv(options.store);
  try {
    const [project] = await listProjects(kv);
    if (project === undefined) throw new Error("Cannot bench: no project");
    const id = project.id;
    const marks = await landmarks(kv, id);
    const { now } = marks;
    const app = createDashboard({
      kv,
      password: PASSWORD,
      now: () => now,
      endpoint: () => "https://logs.example.com/api/v1/logs",
    });
    const cookie = await signIn(app);
    const results: Timed[] = [];
    const loadBefore = Deno.loadavg()[0]!;
    for (const request of requests(id, marks)) {
      results.push(await timeRequest(app, cookie, request, options.runs));
    }
    const load = [loadBefore, Deno.loadavg()[0]!];
    if (options.json) {
      console.log(
        JSON.stringify({ now, projectId: id, load, results }, null, 2),
      );
      return;
    }
    printTable(load, options.runs, results);
  } finally {
    kv.close();
  }
}

if (import.meta.main) await main();
