/**
 * `deno task bench:steady`: the service in the steady state. A log service
 * is never quiet, so this measures ingest, the background work it causes
 * (storing, merging) and the operator's queries together, while traffic
 * runs:
 *
 * 1. a burst: wrk at full speed (`--burst-connections`) for `--burst` seconds;
 * 2. then each rate of `--rates` in turn, offered at a fixed rate (wrk with
 *    a per-connection delay) for `--phase` seconds each.
 *
 * Every `--probe` seconds it reads (bench/probe.ts), from its own handle on
 * the database file (as the CLI would): the backlog (entries not yet stored,
 * open chunks and the entries not yet merged), the five queries of the
 * report (newest 100, `level:critical`, a rare word, an absent word, one
 * user's entries) timed in process, the live bytes (SQLite pages in use) and
 * the file's bytes per byte of JSON accepted, and the server's RSS. A rate
 * is *sustainable* when every answer was 2xx and the backlog at the end of
 * its phase is not above the backlog at its middle (plus a margin).
 *
 * Entries are varied (bench/query/generate.ts): 20,000 bodies cycled, one of
 * which carries the rare word.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { createGenerator, plantWord } from "./query/generate.ts";
import { denoArgs, taskCommand, wholeNumber } from "./options.ts";
import { type Probe, type ProbeContext, probeOnce } from "./probe.ts";
import { serverMemory } from "./process.ts";
import { freePort, type ServerProcess, startService } from "./server.ts";
import { createBenchProject } from "./store.ts";
import { median } from "./timing.ts";
import { hasWrk, runWrk, type WrkResult } from "./wrk.ts";

const ROOT = new URL("../", import.meta.url);
const RARE = "zanzibarquokka";
const BODIES = 20_000;

/** The command line, every number bounded; throws naming the option at fault. */
function readOptions(args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      burst: { type: "string", default: "40" },
      "burst-connections": { type: "string", default: "64" },
      rates: { type: "string", default: "1000,2000,5000" },
      phase: { type: "string", default: "300" },
      probe: { type: "string", default: "15" },
      service: { type: "string" },
      json: { type: "boolean", default: false },
    },
  });
  return {
    burstSeconds: wholeNumber("burst", values.burst, 1, 3600),
    // wrk runs two threads, each with one connection at least.
    burstConnections: wholeNumber(
      "burst-connections",
      values["burst-connections"],
      2,
      10_000,
    ),
    rates: values.rates.split(",").map((rate) =>
      wholeNumber("rates", rate.trim(), 0, 1_000_000)
    ).filter((n) => n > 0),
    // A phase runs while more than a second of it is left.
    phaseSeconds: wholeNumber("phase", values.phase, 2, 86_400),
    probeSeconds: wholeNumber("probe", values.probe, 1, 3600),
    service: values.service,
    json: values.json,
  };
}

const {
  burstSeconds,
  burstConnections,
  rates,
  phaseSeconds,
  probeSeconds,
  ...values
} = (() => {
  try {
    return readOptions(Deno.args);
  } catch (error) {
    console.error((error as Error).message);
    Deno.exit(2);
  }
})();
/** The checkout whose service runs: this one, or `--service DIR` (another build). */
const SERVICE = values.service === undefined
  ? ROOT
  : new URL(`file://${Deno.realPathSync(values.service)}/`);

/** One phase's wrk result. */
interface Phase {
  name: string;
  offered: number | null;
  wrk: WrkResult;
  seconds: number;
  sustainable: boolean | null;
}

/**
 * The bodies wrk cycles through, for `projectId`: varied entries, one of
 * which carries the rare word; also a user of one of them, and the mean
 * bytes of a body.
 */
function makeBodies(projectId: string) {
  const generator = createGenerator(21);
  const bodies: string[] = [];
  let user = "";
  for (let i = 0; i < BODIES; i++) {
    let entry = generator.next();
    if (i === BODIES / 2) entry = plantWord(entry, RARE);
    if (i === 7) user = String(entry.context.userId);
    bodies.push(JSON.stringify({ ...entry, projectId }));
  }
  const rawPerEntry = bodies.reduce((n, b) => n + b.length, 0) / BODIES;
  return { bodies, user, rawPerEntry };
}

/** Starts the service of {@linkcode SERVICE} over `kvPath`. */
async function startSteadyService(kvPath: string): Promise<ServerProcess> {
  const config = await Deno.readTextFile(new URL("deno.json", SERVICE));
  const args = denoArgs(taskCommand(config, "start"), "main.ts");
  const port = freePort();
  const { service } = await startService({ cwd: SERVICE, args, kvPath, port });
  return service;
}

/**
 * Probes every `--probe` seconds, in the phase `phase()` names, adding to
 * `probes`, until `stop()`, which resolves once the probing has ended.
 */
function startProbing(
  context: ProbeContext,
  probes: Probe[],
  phase: () => string,
): { stop(): Promise<void> } {
  let probing = true;
  const prober = (async () => {
    while (probing) {
      await new Promise((r) => setTimeout(r, probeSeconds * 1000));
      if (!probing) continue;
      try {
        probes.push(await probeOnce(context, phase));
        if (!values.json) console.error(JSON.stringify(probes.at(-1)));
      } catch (e) {
        console.error(e);
      }
    }
  })();
  return {
    stop() {
      probing = false;
      return prober;
    },
  };
}

/** Runs wrk with `connections` for `seconds`, each waiting `delayMs` between requests. */
type LoadFn = (
  connections: number,
  seconds: number,
  delayMs?: number,
) => Promise<WrkResult>;

/** The segments of a phase as one wrk result. */
function joinSegments(segments: WrkResult[]): WrkResult {
  return {
    ...segments[0]!,
    requests: segments.reduce((n, r) => n + r.requests, 0),
    non2xx: segments.reduce((n, r) => n + r.non2xx, 0),
    latencyMs: {
      ...segments[0]!.latencyMs,
      p50: median(segments.map((r) => r.latencyMs.p50)),
      p99: Math.max(...segments.map((r) => r.latencyMs.p99)),
    },
  };
}

/**
 * Offers `rate` requests/s for `--phase` seconds; `probes` grows meanwhile,
 * and the probes of the phase say whether the rate is sustainable.
 */
async function ratePhase(
  load: LoadFn,
  rate: number,
  probes: Probe[],
): Promise<Phase> {
  const connections = Math.max(4, Math.min(200, Math.round(rate / 40)));
  const from = probes.length;
  const t1 = performance.now();
  // Segments of one probe period each: wrk's delay is set again after
  // each one from the rate it reached, so the offered rate holds.
  const period = connections * 1000 / rate;
  let delay = period;
  const segments: WrkResult[] = [];
  while ((performance.now() - t1) / 1000 < phaseSeconds - 1) {
    const seconds = Math.min(
      probeSeconds,
      Math.ceil(phaseSeconds - (performance.now() - t1) / 1000),
    );
    const result = await load(
      connections,
      seconds,
      Math.max(0, Math.round(delay)),
    );
    segments.push(result);
    const reached = result.requests / seconds;
    if (reached > 0) {
      delay = Math.max(0, period - (connections * 1000 / reached - delay));
    }
  }
  const result = joinSegments(segments);
  const mine = probes.slice(from);
  const middle = mine[Math.floor(mine.length / 2)];
  const end = mine.at(-1);
  const size = (p?: Probe) => p ? p.queuedEntries + p.unmergedEntries : 0;
  return {
    name: `${rate}/s`,
    offered: rate,
    wrk: result,
    seconds: (performance.now() - t1) / 1000,
    // Fewer than two probes leave no middle to compare the end with.
    sustainable: mine.length < 2 ? null : result.non2xx === 0 &&
      size(end) <= size(middle) * 1.2 + 2 * rate,
  };
}

/** The report printed at the end. */
function reportOf(
  rawPerEntry: number,
  peakRssKiB: number,
  phases: Phase[],
  probes: Probe[],
) {
  return {
    rawBytesPerEntry: Math.round(rawPerEntry),
    peakRssMiB: Math.round(peakRssKiB / 102.4) / 10,
    phases: phases.map((p) => ({
      name: p.name,
      offered: p.offered,
      accepted: Math.round(
        (p.wrk.requests - p.wrk.non2xx) / p.seconds,
      ),
      non2xx: p.wrk.non2xx,
      p50Ms: p.wrk.latencyMs.p50,
      p99Ms: p.wrk.latencyMs.p99,
      sustainable: p.sustainable,
    })),
    probes,
  };
}

async function main() {
  const dir = await Deno.makeTempDir({ prefix: "logs-steady-" });
  const kvPath = `${dir}/kv.sqlite`;
  const project = await createBenchProject(kvPath, "steady bench");
  const { bodies, user, rawPerEntry } = makeBodies(project.id);
  const queries: Record<string, string> = {
    newest: "",
    "level:critical": "level:critical",
    "rare word": RARE,
    "absent word": "nowherefoundxyz",
    "one user": `context.userId:${user}`,
  };
  const server = await startSteadyService(kvPath);
  const url = `${server.url}/api/v1/logs`;
  const bodiesFile = `${dir}/bodies.jsonl`;
  Deno.writeTextFileSync(bodiesFile, bodies.join("\n") + "\n");
  // Each wrk run starts past the addresses the earlier ones used.
  let offset = 0;
  const load: LoadFn = async (connections, seconds, delayMs = 0) => {
    const { result } = await runWrk({
      url,
      body: `@${bodiesFile}`,
      connections,
      threads: 2,
      durationSeconds: seconds,
      addressOffset: offset,
      delayMs,
    });
    offset += result.requests;
    return result;
  };
  const kv = await Deno.openKv(kvPath);
  const context: ProbeContext = {
    kv,
    kvPath,
    projectId: project.id,
    server,
    queries,
    rawPerEntry,
    began: performance.now(),
  };
  const probes: Probe[] = [];
  let phaseName = "burst";
  const prober = startProbing(context, probes, () => phaseName);
  const phases: Phase[] = [];
  try {
    const t0 = performance.now();
    const burst = await load(burstConnections, burstSeconds);
    const seconds = (performance.now() - t0) / 1000;
    phases.push({
      name: "burst",
      offered: null,
      wrk: burst,
      seconds,
      sustainable: null,
    });
    for (const rate of rates) {
      phaseName = `${rate}/s`;
      phases.push(await ratePhase(load, rate, probes));
    }
  } finally {
    await prober.stop();
    const memory = await serverMemory(server.child.pid, "main.ts");
    await server.stop();
    kv.close();
    const report = reportOf(
      rawPerEntry,
      memory?.vmHwmKiB ?? 0,
      phases,
      probes,
    );
    console.log(JSON.stringify(report, null, values.json ? 0 : 2));
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  if (!await hasWrk()) {
    console.error(
      "Cannot find wrk on PATH: install it first, e.g. `apt-get install -y wrk`",
    );
    Deno.exit(1);
  }
  await main();
}
