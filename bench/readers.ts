/**
 * Heavy readers against the endpoint: another project's `POST` latency while
 * read tokens loop a heavy aggregation over a stored project through the read
 * API, with the service's searches in their query thread (`QUERY_THREAD=on`,
 * the default) and in the thread that answers the endpoint (`off`), turn
 * about, each on a fresh copy of the store; with `--rate`, wrk offers that many
 * entries a second to the other project besides. The service runs as its `start`
 * task runs it, with the dashboard, on 127.0.0.1.
 *
 * ```sh
 * deno task bench:query --count 500000 --direct --keep data/bench-500k.sqlite
 * deno task bench:readers --store data/bench-500k.sqlite   # --readers 0,1,4 --seconds 15
 * deno task bench:readers --store data/bench-500k.sqlite --rate 2000   # with wrk's ingest besides
 * ```
 *
 * @module
 */
import { parseArgs } from "node:util";
import { createProject, listProjects, updateProject } from "../db/projects.ts";
import { createReadToken } from "../db/tokens.ts";
import { denoArgs, taskCommand } from "./options.ts";
import { freePort, startServer } from "./server.ts";
import { markdownTable } from "./report.ts";
import { runWrk } from "./wrk.ts";
import { quantile } from "./timing.ts";

const ROOT = new URL("../", import.meta.url);
const ORIGIN = "https://app.example.com";
/** The Origin bench/post.lua sends. */
const WRK_ORIGIN = "https://bench.example";
/** Pause between two timed `POST`s, ms. */
const POST_EVERY_MS = 50;

const log = (line: string) => console.error(line);

/** A copy of the store with a reader's token and a victim project. */
async function prepare(store: string, dir: string) {
  const kvPath = `${dir}/kv.sqlite`;
  await Deno.copyFile(store, kvPath);
  const kv = await Deno.openKv(kvPath);
  try {
    const [read] = await listProjects(kv);
    if (!read) throw new Error(`Cannot find a project in ${store}`);
    // The generated entries are dated in the past: kept while measured.
    await updateProject(kv, read.id, (p) => ({ ...p, retentionDays: 3650 }));
    const victim = await createProject(kv, {
      name: "victim",
      // wrk's entries come from bench/post.lua's origin.
      allow: [ORIGIN, WRK_ORIGIN],
    });
    const { token } = await createReadToken(kv, {
      projectId: read.id,
      name: "bench",
      createdBy: "cli",
    });
    return { kvPath, readId: read.id, victimId: victim.id, token };
  } finally {
    kv.close();
  }
}

/**
 * Loops the query until `stop`: how many answers came back whole, and how
 * many partial (the time budget cut them short). A `429` waits 100 ms.
 */
async function readLoop(url: string, token: string, stop: () => boolean) {
  const answers = { whole: 0, partial: 0 };
  while (!stop()) {
    const res = await fetch(url, {
      headers: { authorization: `Bearer ${token}` },
    });
    await res.arrayBuffer();
    if (res.status === 429) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    } else if (res.status !== 200) {
      throw new Error(`The read answered ${res.status}`);
    } else if (res.headers.has("X-Searched-Back-To")) answers.partial++;
    else answers.whole++;
  }
  return answers;
}

/** What a run measures. */
interface Options {
  store: string;
  readers: number[];
  ms: number;
  query: string;
  /** Entries a second offered to the victim's project besides, by wrk. */
  rate: number;
}

/** Connections of the background ingest. */
const INGEST_CONNECTIONS = 64;

/** wrk offering about `rate` entries a second for `ms`, when `rate` > 0. */
function ingest(base: string, victimId: string, rate: number, ms: number) {
  if (rate === 0) return Promise.resolve(null);
  return runWrk({
    url: `${base}/api/v1/logs`,
    connections: INGEST_CONNECTIONS,
    threads: 2,
    durationSeconds: Math.round(ms / 1000),
    body: JSON.stringify({
      level: "info",
      projectId: victimId,
      data: { title: "Background entry", message: "x".repeat(200) },
    }),
    addressOffset: 0,
    delayMs: Math.round(INGEST_CONNECTIONS * 1000 / rate),
  }).then(({ result }) => result);
}

/** The victim's `POST` times while `readers` loop the query, for `ms`. */
async function measure(
  base: string,
  setup: Awaited<ReturnType<typeof prepare>>,
  options: Omit<Options, "readers" | "store"> & { readers: number },
) {
  const until = performance.now() + options.ms;
  const stop = () => performance.now() >= until;
  const url =
    `${base}/dashboard/api/v1/projects/${setup.readId}/logs?${new URLSearchParams(
      {
        q: options.query,
      },
    )}`;
  const loops = Array.from(
    { length: options.readers },
    () => readLoop(url, setup.token, stop),
  );
  const background = ingest(base, setup.victimId, options.rate, options.ms);
  const times: number[] = [];
  for (let n = 0; !stop(); n++) {
    const began = performance.now();
    const res = await fetch(`${base}/api/v1/logs`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Origin: ORIGIN },
      body: JSON.stringify({
        level: "info",
        projectId: setup.victimId,
        data: { title: "Victim", n },
      }),
    });
    await res.body?.cancel();
    if (res.status !== 200) throw new Error(`The POST answered ${res.status}`);
    times.push(performance.now() - began);
    await new Promise((resolve) => setTimeout(resolve, POST_EVERY_MS));
  }
  const answers = await Promise.all(loops);
  const whole = answers.reduce((n, a) => n + a.whole, 0);
  const partial = answers.reduce((n, a) => n + a.partial, 0);
  const wrk = await background;
  return {
    p50: quantile(times, 0.5),
    p99: quantile(times, 0.99),
    posts: times.length,
    answered: `${whole} (${partial} partial)`,
    ingested: wrk
      ? `${Math.round(wrk.requestsPerSec)} (${wrk.non2xx} non-2xx, ${
        Object.values(wrk.socketErrors).reduce((a, b) => a + b, 0)
      } socket errors)`
      : "-",
  };
}

/** One service run over a fresh copy: a row per count of readers. */
async function runMode(
  mode: "on" | "off",
  options: Options,
  args: string[],
): Promise<string[][]> {
  const dir = await Deno.makeTempDir({ prefix: "bench-readers-" });
  try {
    const setup = await prepare(options.store, dir);
    const port = freePort();
    const service = await startServer({
      name: "the service",
      args,
      cwd: ROOT,
      port,
      env: {
        KV_PATH: setup.kvPath,
        PORT: String(port),
        HOSTNAME: "127.0.0.1",
        DASHBOARD: "on",
        ADMIN_PASSWORD: "readers benchmark",
        QUERY_THREAD: mode,
        // wrk's requests come from one address, each its own by the header.
        TRUST_PROXY: "1",
      },
    });
    const rows: string[][] = [];
    try {
      for (const readers of options.readers) {
        log(`QUERY_THREAD=${mode}, ${readers} readers`);
        const r = await measure(service.url, setup, { ...options, readers });
        rows.push([
          mode,
          String(readers),
          r.p50.toFixed(1),
          r.p99.toFixed(1),
          String(r.posts),
          r.answered,
          r.ingested,
        ]);
      }
    } finally {
      await service.stop();
    }
    return rows;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      store: { type: "string" },
      readers: { type: "string", default: "0,1,4" },
      seconds: { type: "string", default: "15" },
      query: { type: "string", default: "* | uniq context.userId" },
      rate: { type: "string", default: "0" },
    },
  });
  if (values.store === undefined) {
    throw new Error(
      "Cannot run: expected --store, a store kept by bench:query --keep",
    );
  }
  const config = await Deno.readTextFile(new URL("deno.json", ROOT));
  const args = denoArgs(taskCommand(config, "start"), "main.ts");
  const options = {
    store: values.store,
    readers: values.readers.split(",").map(Number),
    ms: Number(values.seconds) * 1000,
    query: values.query,
    rate: Number(values.rate),
  };
  const rows = [
    ...await runMode("on", options, args),
    ...await runMode("off", options, args),
  ];
  console.log(
    `Readers looping \`${options.query}\`; a POST every ${POST_EVERY_MS} ms, ${values.seconds} s each\n`,
  );
  console.log(
    markdownTable([
      "QUERY_THREAD",
      "readers",
      "POST p50 ms",
      "POST p99 ms",
      "POSTs",
      "reads answered",
      "ingest req/s",
    ], rows),
  );
}
