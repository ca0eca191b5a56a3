/**
 * Running the operator commands in-process against a KV, with their output
 * captured and a fake clock, as the CLI suites do.
 *
 * @module
 */
import type { CommandContext } from "../../cli/command.ts";
import { runCli } from "../../cli/main.ts";
import { type FakeClock, fakeClock, type Harness } from "./harness.ts";

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
