/**
 * Running the operator commands in-process against a KV, with their output
 * captured and a fake clock, as the CLI suites do.
 *
 * @module
 */
import { fixtureTest } from "./fixture.ts";
import assert from "node:assert/strict";
import type { CommandContext } from "../../cli/command.ts";
import { runCli } from "../../cli/main.ts";
import {
  EVENT_TIMEOUT_MS,
  type FakeClock,
  fakeClock,
  type Harness,
  randomEntry,
  signEntry,
  withHarness,
  withTimeout,
} from "./harness.ts";

export { kvTest, withKv } from "./harness.ts";

/** What a command printed and returned. */
export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export type RunOptions = Partial<Omit<CommandContext, "kv" | "args">>;

/** Runs `deno task <args>` in-process against `kv`. */
export async function cli(
  kv: Deno.Kv,
  args: string[],
  options: RunOptions & { clock?: FakeClock } = {},
): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const code = await runCli({
    kv,
    args,
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    now: options.clock?.now ?? fakeClock().now,
    isTerminal: false,
    ...options,
  });
  return { code, stdout, stderr };
}

/** Runs `deno task rejected <args>` in-process on a harness, at its clock. */
export function rejected(
  h: Harness,
  args: string[],
  options: RunOptions = {},
): Promise<Run> {
  return cli(h.kv, ["rejected", ...args], { now: h.clock.now, ...options });
}

/** Parses the one JSON document a command printed. */
export function json(run: Run): Record<string, unknown> {
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout);
}

/** Parses the JSON lines a command printed. */
export function jsonLines(run: Run): Record<string, unknown>[] {
  assert.equal(run.code, 0, run.stderr);
  return run.stdout.trim().split("\n").filter((l) => l !== "").map((l) =>
    JSON.parse(l)
  );
}

/** Asserts a one-line refusal on stderr, nothing on stdout, a non-zero exit. */
export function assertRefused(run: Run, message: string | RegExp): void {
  assert.notEqual(run.code, 0);
  assert.equal(run.stdout, "");
  assert.equal(run.stderr.trimEnd().split("\n").length, 1, run.stderr);
  if (typeof message === "string") assert.equal(run.stderr, message + "\n");
  else assert.match(run.stderr, message);
}

/** What {@linkcode follow} hands each step of the test. */
export interface FollowStep {
  /** Which wait between polls this is, from 1. */
  poll: number;
  /** The wait the command asked for. */
  ms: number;
  /** Stops the command, as Ctrl-C does. */
  stop: () => void;
}

/**
 * Runs `logs --follow` with each wait between polls a step of the test, until
 * a step calls `stop`; fails, and stops the command, if it still runs after
 * {@linkcode EVENT_TIMEOUT_MS}.
 */
export async function follow(
  kv: Deno.Kv,
  args: string[],
  step: (at: FollowStep) => Promise<void> | void,
  options: RunOptions & { clock?: FakeClock } = {},
): Promise<Run> {
  const controller = new AbortController();
  let poll = 0;
  const stop = () => controller.abort();
  const sleep = async (ms: number) => await step({ poll: ++poll, ms, stop });
  try {
    return await withTimeout(
      cli(kv, args, { ...options, sleep, signal: controller.signal }),
      EVENT_TIMEOUT_MS,
      `"${args.join(" ")}" to stop when aborted`,
    );
  } finally {
    controller.abort();
  }
}

/** Creates a project through the CLI and returns it as printed. */
export async function create(kv: Deno.Kv, ...allow: string[]) {
  const run = await cli(kv, [
    "project",
    "create",
    "--name",
    "web",
    ...allow.flatMap((a) => ["--allow", a]),
    "--json",
  ]);
  return json(run) as {
    projectId: string;
    name: string;
    secret: string;
    settings: { allowedOrigin: string[] };
  };
}

/**
 * Creates a project through the CLI that allows a browser origin and an app
 * id, stores one entry of each client kind, a second apart, and returns the
 * project as printed.
 */
export async function storeThreeKinds(h: Harness) {
  const project = await create(
    h.kv,
    "https://app.example.com",
    "com.example.app.ios",
  );
  const { projectId, secret } = project;
  await h.post(
    randomEntry({ projectId, level: "info", data: { title: "from browser" } }),
    { Origin: "https://app.example.com" },
  );
  h.clock.advance(1000);
  await h.post(
    randomEntry({
      projectId,
      level: "warning",
      appid: "com.example.app.ios",
      data: { title: "from app" },
      context: { environment: "production", build: 42 },
    }),
  );
  h.clock.advance(1000);
  const body = randomEntry({
    projectId,
    level: "error",
    data: { title: "from server" },
    device: "api-1",
  });
  const { timestamp, signature } = signEntry(secret, body, h.clock.now());
  await h.post(body, { timestamp, signature });
  await h.process();
  return project;
}

/** Runs `fn` on a harness holding a project of {@linkcode storeThreeKinds}. */
export async function withThreeKinds(
  fn: (
    h: Harness,
    project: Awaited<ReturnType<typeof storeThreeKinds>>,
  ) => Promise<void>,
): Promise<void> {
  await withHarness(async (h) => await fn(h, await storeThreeKinds(h)));
}

/** A test run inside {@linkcode withThreeKinds}. */
export const threeKindsTest = fixtureTest(withThreeKinds);
