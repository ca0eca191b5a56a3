/**
 * Several processes on one KV file (docs/design.md#locked-database): three
 * servers started as `deno task start` starts them, the dashboard mounted on
 * one, 16 connections posting entries across the three, an operator adding
 * alert rules with the CLI in a loop and a browser creating projects on the
 * dashboard, for `--seconds` (20). Prints the answers by status, the
 * commands' exit codes and what the servers printed: lines of stack traces
 * and `database is locked` lines.
 *
 * `deno run -A bench/shared_file.ts [--seconds 20] [--service DIR]`: DIR is
 * the checkout to run (this one by default), to compare two builds.
 *
 * @module
 */
import { parseArgs } from "node:util";

const { values } = parseArgs({
  args: Deno.args,
  options: { seconds: { type: "string" }, service: { type: "string" } },
});
const root = values.service ?? new URL("..", import.meta.url).pathname;
const seconds = Number(values.seconds ?? 20);
const dir = await Deno.makeTempDir();
const env = {
  ...Deno.env.toObject(),
  KV_PATH: `${dir}/kv.sqlite`,
  PORT: "0",
  HOSTNAME: "127.0.0.1",
  DASHBOARD: "on",
  ADMIN_PASSWORD: "correct horse battery staple",
  RATE_LIMIT_RPS: "1000000",
  RATE_LIMIT_BURST: "1000000",
};
const ORIGIN = "https://app.example.com";

async function command(args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "cli/main.ts", ...args],
    cwd: root,
    env,
  }).output();
  const decoder = new TextDecoder();
  return {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

function counter() {
  const counts: Record<string, number> = {};
  return {
    counts,
    add: (key: number | string) => (counts[key] = (counts[key] ?? 0) + 1),
  };
}

const created = await command([
  "project",
  "create",
  "--name",
  "load",
  "--allow",
  ORIGIN,
  "--json",
]);
const projectId = JSON.parse(created.stdout).projectId as string;
const printed: string[] = [];
const servers: {
  child: Deno.ChildProcess;
  url: string;
  done: Promise<void>;
}[] = [];
for (let i = 0; i < 3; i++) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["task", "start"],
    cwd: root,
    env,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const out = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  let found: RegExpExecArray | null = null;
  while (!(found = /Listening on (http:\/\/[^/\s]+)/.exec(seen))) {
    const { value, done } = await out.read();
    if (done) throw new Error(`Server ${i} ended: ${seen}`);
    seen += value;
  }
  const done = Promise.all([
    (async () => {
      while (!(await out.read()).done) { /* drain */ }
    })(),
    (async () => {
      const err = child.stderr.pipeThrough(new TextDecoderStream());
      for await (const chunk of err) printed.push(chunk);
    })(),
  ]).then(() => {});
  servers.push({ child, url: found[1]!, done });
}

const end = Date.now() + seconds * 1000;
const ingest = counter();
async function poster(): Promise<void> {
  for (let n = 0; Date.now() < end; n++) {
    const url = servers[n % servers.length]!.url;
    try {
      const res = await fetch(`${url}/api/v1/logs`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Origin: ORIGIN },
        body: JSON.stringify({
          projectId,
          level: "info",
          data: { title: "Load", message: `Entry ${n}` },
          device: { type: "browser", os: "Linux" },
          context: { environment: "bench", sessionId: "s1" },
        }),
      });
      await res.body?.cancel();
      ingest.add(res.status);
    } catch {
      ingest.add("network error");
    }
  }
}

const commands = counter();
const commandErrors: string[] = [];
async function operator(): Promise<void> {
  for (let n = 0; Date.now() < end; n++) {
    const run = await command([
      "alert",
      "add",
      projectId,
      "--query",
      `level:error rule${n}`,
      "--webhook",
      "https://hooks.example.com/x",
    ]);
    commands.add(run.code);
    if (run.stderr !== "") commandErrors.push(run.stderr.trim());
  }
}

const pages = counter();
async function browser(): Promise<void> {
  const server = servers[1]!.url;
  const base = `${server}/dashboard`;
  const same = { origin: server, "sec-fetch-site": "same-origin" };
  const cookieOf = (res: Response, name: string) =>
    res.headers.getSetCookie().map((c) => c.split(";")[0]!)
      .find((c) => c.startsWith(`${name}=`)) ?? "";
  const csrf = (html: string) =>
    /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";
  const form = await fetch(`${base}/login`);
  const signed = await fetch(`${base}/login`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: cookieOf(form, "dash_login"), ...same },
    body: new URLSearchParams({
      _csrf: csrf(await form.text()),
      password: env.ADMIN_PASSWORD,
      next: "/dashboard/",
    }),
  });
  await signed.body?.cancel();
  const cookie = cookieOf(signed, "dash_session");
  const token = csrf(
    await (await fetch(`${base}/`, { headers: { cookie } }))
      .text(),
  );
  for (let n = 0; Date.now() < end; n++) {
    const res = await fetch(`${base}/projects`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, ...same },
      body: new URLSearchParams({
        _csrf: token,
        name: `Page ${n}`,
        allow: ORIGIN,
      }),
    });
    await res.body?.cancel();
    pages.add(res.status);
  }
}

await Promise.all([
  ...Array.from({ length: 16 }, poster),
  operator(),
  browser(),
]);
// Let the consumers and mergers finish what the load left.
await new Promise((resolve) => setTimeout(resolve, 3000));
for (const server of servers) {
  server.child.kill("SIGTERM");
  await server.child.status;
  await server.done;
}
await Deno.remove(dir, { recursive: true });
const all = printed.join("");
console.log(`Entries posted: ${JSON.stringify(ingest.counts)}`);
console.log(`Dashboard POST /projects: ${JSON.stringify(pages.counts)}`);
console.log(`alert add, exit codes: ${JSON.stringify(commands.counts)}`);
for (const line of commandErrors.slice(0, 3)) console.log(`  ${line}`);
console.log(
  `Servers printed ${(all.match(/^\s+at /gm) ?? []).length} stack lines, ` +
    `${(all.match(/database is locked/g) ?? []).length} "database is locked" ` +
    `lines, ${(all.match(/stayed locked/g) ?? []).length} given up`,
);
