/**
 * The client library in server runtimes, as separate processes sending to the
 * real server: Deno (importing `client/mod.ts`) and Node (importing the ESM
 * build). An uncaught error or an unhandled rejection is logged as `critical`
 * with its stack and delivered before the process exits with status 1; a
 * process that simply ends stays up until its entries are delivered.
 */
import assert from "node:assert/strict";
import type { LogRecord } from "../../domain/entry.ts";
import { type LiveServer, startServer } from "../_helpers/client_server.ts";

const MODES = ["throw", "reject", "end"] as const;
type Mode = typeof MODES[number];

/** The program: a signing logger that captures errors, then fails as told. */
function program(importFrom: string): string {
  return `import { createLogger } from ${JSON.stringify(importFrom)};
const [endpoint, projectId, secret, mode] = globalThis.Deno
  ? Deno.args
  : process.argv.slice(2);
const logger = createLogger({ endpoint, projectId, secret });
logger.captureErrors();
for (let i = 0; i < 3; i++) logger.info("Started", undefined, { mode, i });
if (mode === "throw") setTimeout(() => { throw new Error("Boom " + mode); }, 0);
if (mode === "reject") Promise.reject(new Error("Boom " + mode));
`;
}

interface Run {
  mode: Mode;
  code: number;
  stderr: string;
}

/** Runs `command` with the program once per mode, in parallel. */
async function runAll(command: (mode: Mode) => Deno.Command): Promise<Run[]> {
  return await Promise.all(MODES.map(async (mode) => {
    const output = await command(mode).output();
    return {
      mode,
      code: output.code,
      stderr: new TextDecoder().decode(output.stderr),
    };
  }));
}

/** Checks the exit statuses and what each run stored. */
function checkRuns(runs: Run[], logs: LogRecord[], events: string[]): void {
  for (const run of runs) {
    assert.equal(run.code, run.mode === "end" ? 0 : 1, run.stderr);
  }
  const started = logs.filter((log) => log.data.title === "Started");
  assert.equal(started.length, 9, "three per run");
  const critical = logs.filter((log) => log.level === "critical");
  assert.deepEqual(
    critical.map((log) => log.data.title).sort(),
    ["Boom reject", "Boom throw"],
  );
  for (const log of critical) {
    assert.equal(log.auth, "signature");
    assert.match(
      log.data.stack as string,
      /^Error: Boom (throw|reject)\n\s+at /,
    );
    assert.equal(log.data.name, "Error");
  }
  assert.deepEqual(
    critical.map((log) => log.data.event).sort(),
    events,
  );
  assert.equal(logs.length, 11);
}

async function withServer(
  fn: (server: LiveServer, projectId: string, secret: string) => Promise<void>,
): Promise<void> {
  const server = await startServer({ rps: 10_000, burst: 10_000 });
  try {
    const project = await server.h.project([]);
    await fn(server, project.id, project.secret);
  } finally {
    await server.close();
  }
}

/**
 * Writes the test program, importing the client from `module`, to a
 * temporary file `name`, runs `fn` with its path, then removes it.
 */
async function withProgram(
  name: string,
  module: URL,
  fn: (file: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/${name}`;
    await Deno.writeTextFile(file, program(module.href));
    await fn(file);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Runs `program` (with `logger` as its client) once per mode through
 * `runtime`, which names the executable and the arguments before the
 * program's own, and checks what the endpoint stored.
 */
async function checkRuntime(
  program: string,
  logger: URL,
  runtime: (file: string) => [string, string[]],
  kinds: string[],
): Promise<void> {
  await withServer(async (server, projectId, secret) => {
    await withProgram(program, logger, async (file) => {
      const [executable, before] = runtime(file);
      const runs = await runAll((mode) =>
        new Deno.Command(executable, {
          args: [...before, server.endpoint, projectId, secret, mode],
          stdout: "null",
          stderr: "piped",
        })
      );
      checkRuns(runs, await server.stored(projectId, 11), kinds);
    });
  });
}

Deno.test("Deno: uncaught errors and rejections are delivered before exit; a program that ends waits for its entries", async () => {
  await checkRuntime(
    "program.ts",
    new URL("../../client/mod.ts", import.meta.url),
    (file) => [Deno.execPath(), [
      "run",
      "--allow-net=127.0.0.1",
      "--no-config",
      file,
    ]],
    ["error", "unhandledrejection"],
  );
});

Deno.test("Node: the same with the ESM build", async (t) => {
  const node = Deno.env.get("NODE") ?? "node";
  try {
    await new Deno.Command(node, { args: ["--version"], stdout: "null" })
      .output();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    console.log(`Skipped: no "${node}" on this machine`);
    await t.step({ name: "node is installed", ignore: true, fn() {} });
    return;
  }
  await checkRuntime(
    "program.mjs",
    new URL("../../client/dist/logger.js", import.meta.url),
    (file) => [node, [file]],
    ["uncaughtException", "unhandledRejection"],
  );
});
