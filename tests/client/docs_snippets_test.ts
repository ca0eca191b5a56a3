/**
 * The sending snippets of docs/clients.md (and of the README, should it carry
 * one), taken from the pages themselves (each code block after a
 * `<!-- snippet: NAME -->` line, so the documentation cannot drift from what
 * is tested) and run against the real server: each must be answered `200` and
 * its entry stored with `auth: signature`. A snippet whose tool is not
 * installed (Go, often) is skipped with a message.
 */
import assert from "node:assert/strict";
import { stats } from "../_helpers/harness.ts";
import { type LiveServer, startServer } from "../_helpers/client_server.ts";

const PAGES = [
  new URL("../../README.md", import.meta.url),
  new URL("../../docs/clients.md", import.meta.url),
];
const CLIENT = new URL("../../client/mod.ts", import.meta.url);

/** The snippets of the pages, by file name; a name given twice is refused. */
async function snippets(): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const pattern = /<!-- snippet: (\S+) -->\s*\n```\w*\n([\s\S]*?)\n```\n/g;
  for (const page of PAGES) {
    const text = await Deno.readTextFile(page);
    for (const [, name, code] of text.matchAll(pattern)) {
      assert.ok(!found.has(name!), `Snippet ${name} appears twice`);
      found.set(name!, code! + "\n");
    }
  }
  return found;
}

/** How a snippet is run, and the tools it needs. */
interface Runner {
  tools: string[];
  args: (file: string) => string[];
}

/** A TypeScript snippet, run by this Deno outside the repository's config. */
const DENO_RUN: Runner = {
  tools: [Deno.execPath()],
  args: (file) => [
    Deno.execPath(),
    "run",
    "--allow-env",
    "--allow-net",
    "--no-config",
    file,
  ],
};

/** How each snippet is run, by file name. */
const RUNNERS: Record<string, Runner> = {
  "send_log.ts": DENO_RUN,
  "send.ts": DENO_RUN,
  "send_log.py": { tools: ["python3"], args: (file) => ["python3", file] },
  "send-log.mjs": { tools: ["node"], args: (file) => ["node", file] },
  "send_log.go": { tools: ["go"], args: (file) => ["go", "run", file] },
  "send-log.sh": {
    tools: ["sh", "curl", "openssl"],
    args: (file) => ["sh", file],
  },
};

/** Whether `tool` runs here. */
async function installed(tool: string): Promise<boolean> {
  try {
    const args = tool === "go"
      ? ["version"]
      : tool === "openssl"
      ? ["version"]
      : ["--version"];
    await new Deno.Command(tool, { args, stdout: "null", stderr: "null" })
      .output();
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Runs `args` with the project's credentials, killed after 20 s. */
async function run(
  args: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 20_000);
  try {
    const output = await new Deno.Command(args[0]!, {
      args: args.slice(1),
      env,
      cwd,
      stdout: "piped",
      stderr: "piped",
      signal: abort.signal,
    }).output();
    const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    return {
      code: output.code,
      stdout: decode(output.stdout),
      stderr: decode(output.stderr),
    };
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("the documented sending snippets are answered 200 and stored as signed entries", async (t) => {
  const found = await snippets();
  assert.deepEqual([...found.keys()].sort(), Object.keys(RUNNERS).sort());
  const server: LiveServer = await startServer({ rps: 1000, burst: 1000 });
  const dir = await Deno.makeTempDir();
  try {
    const project = await server.h.project([]);
    const env = {
      PROJECT_ID: project.id,
      SECRET: project.secret,
      LOG_ENDPOINT: server.endpoint,
    };
    let stored = 0;
    for (const [name, runner] of Object.entries(RUNNERS)) {
      const missing: string[] = [];
      for (const tool of runner.tools) {
        if (!(await installed(tool))) missing.push(tool);
      }
      if (missing.length > 0) {
        console.log(`Skipped ${name}: ${missing.join(", ")} not installed`);
      }
      await t.step({
        name,
        ignore: missing.length > 0,
        async fn() {
          let code = found.get(name)!;
          if (name.endsWith(".ts")) {
            // The snippet imports the library from the repository's root.
            code = code.replace(
              '"./client/mod.ts"',
              JSON.stringify(CLIENT.href),
            );
          }
          await Deno.writeTextFile(`${dir}/${name}`, code);
          const result = await run(runner.args(`${dir}/${name}`), env, dir);
          assert.equal(result.code, 0, result.stderr);
          if (!name.endsWith(".ts")) {
            assert.match(result.stdout, /\{"status":"queued"\}/);
          }
          stored++;
          const logs = await server.stored(project.id, stored);
          assert.equal(logs.length, stored);
          const log = logs.at(-1)!;
          assert.equal(log.auth, "signature");
          if (name === "send.ts") {
            // The example with only fetch and WebCrypto.
            assert.equal(log.level, "critical");
            assert.equal(log.data.title, "Export crashed");
          } else {
            assert.equal(log.level, "error");
            assert.equal(log.data.title, "Payment failed");
            assert.equal(log.data.orderId, 1234);
          }
          assert.deepEqual(await stats(server.h.kv, project.id), {
            accepted: stored,
            rejected: {},
          });
        },
      });
    }
    await t.step(
      "the TypeScript snippets name a missing variable",
      async () => {
        for (const name of ["send.ts", "send_log.ts"]) {
          const result = await run(RUNNERS[name]!.args(`${dir}/${name}`), {
            SECRET: project.secret,
            LOG_ENDPOINT: server.endpoint,
          }, dir);
          assert.notEqual(result.code, 0);
          assert.match(
            result.stderr,
            /Set PROJECT_ID: see "deno task project show"/,
          );
        }
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
    await server.close();
  }
});
