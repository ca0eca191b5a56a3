/**
 * A project's scrubbing rules (docs/privacy.md), kept in its project record
 * so that the consumer, which reads the record for every batch, has them
 * with no further read: adding and removing rules, the project's key of
 * keyed hashes, and the compiled scrubber of a record.
 *
 * @module
 */
import { type DetectorName, DETECTORS } from "../domain/detectors.ts";
import { PatternError, validatePattern } from "../domain/detectors.ts";
import {
  compileScrubber,
  keyWords,
  SCRUB_ACTIONS,
  type ScrubAction,
  type Scrubber,
  type ScrubRule,
  type ScrubTarget,
} from "../domain/scrub.ts";
import { type Project, updateProject } from "./projects.ts";
import { listLogs } from "./query/query.ts";
import { InvalidValueError } from "./validation.ts";

/** Rules a project holds at most, custom patterns included. */
export const MAX_SCRUB_RULES = 20;
/** Custom patterns a project holds at most. */
export const MAX_SCRUB_PATTERNS = 5;
/** Longest key name of a rule. */
export const MAX_SCRUB_KEY_CHARS = 100;
/** Random bytes of a project's key of keyed hashes. */
const HASH_KEY_BYTES = 32;

/** A rule as asked for, before it has an id. */
export type ScrubRuleInput =
  | { kind: "key"; key: string; action?: ScrubAction }
  | { kind: "detector"; detector: string; action?: ScrubAction }
  | { kind: "pattern"; pattern: string; action?: ScrubAction };

/** A project's rules (none when it never had any). */
export function scrubRules(project: Project): ScrubRule[] {
  return project.scrub?.rules ?? [];
}

/**
 * Checks a rule and gives it its id: `key:WORDS`, `detector:NAME` (one rule
 * per key and per detector: adding one again changes its action), or
 * `pattern:N`.
 */
export function prepareRule(
  input: ScrubRuleInput,
  project: Project,
): ScrubRule {
  const action = input.action ?? "remove";
  if (!(SCRUB_ACTIONS as readonly string[]).includes(action)) {
    throw new InvalidValueError(
      `Cannot use action "${action}": expected remove, mask or hash`,
    );
  }
  if (input.kind === "key") {
    const words = keyWords(input.key);
    if (input.key.length > MAX_SCRUB_KEY_CHARS || words.length === 0) {
      throw new InvalidValueError(
        `Cannot scrub key "${input.key}": expected 1 to ${MAX_SCRUB_KEY_CHARS} characters with a letter or digit`,
      );
    }
    return {
      id: `key:${words.join("_")}`,
      kind: "key",
      key: input.key,
      action,
    };
  }
  if (input.kind === "detector") {
    if (!(DETECTORS as readonly string[]).includes(input.detector)) {
      throw new InvalidValueError(
        `Cannot use detector "${input.detector}": expected one of ${
          DETECTORS.join(", ")
        }`,
      );
    }
    const detector = input.detector as DetectorName;
    return { id: `detector:${detector}`, kind: "detector", detector, action };
  }
  try {
    validatePattern(input.pattern);
  } catch (error) {
    if (error instanceof PatternError) {
      throw new InvalidValueError(error.message);
    }
    throw error;
  }
  const same = scrubRules(project).find((r) =>
    r.kind === "pattern" && r.pattern === input.pattern
  );
  const next = (project.scrub?.next ?? 0) + 1;
  if (same) return { ...same, action } as ScrubRule;
  return {
    id: `pattern:${next}`,
    kind: "pattern",
    pattern: input.pattern,
    action,
  };
}

function randomKey(): string {
  const raw = crypto.getRandomValues(new Uint8Array(HASH_KEY_BYTES));
  return btoa(String.fromCharCode(...raw));
}

/**
 * Adds a rule to a project, or changes the action of its rule of the same
 * key or detector. A rule that hashes gives the project its key of keyed
 * hashes, made once and kept. Returns the record and the rule as saved.
 *
 * @example
 * ```ts
 * const { rule } = await addScrubRule(kv, projectId, { kind: "detector", detector: "email", action: "hash" });
 * ```
 */
export async function addScrubRule(
  kv: Deno.Kv,
  projectId: string,
  input: ScrubRuleInput,
): Promise<{ project: Project; rule: ScrubRule }> {
  return await changeRules(kv, projectId, (project) => {
    const rule = prepareRule(input, project);
    const scrub = project.scrub ?? { rules: [], next: 0 };
    const at = scrub.rules.findIndex((r) => r.id === rule.id);
    if (at >= 0) scrub.rules[at] = rule;
    else {
      if (scrub.rules.length >= MAX_SCRUB_RULES) {
        throw new InvalidValueError(
          `Cannot add rule "${rule.id}": a project holds at most ${MAX_SCRUB_RULES} scrubbing rules; remove one first`,
        );
      }
      const patterns = scrub.rules.filter((r) => r.kind === "pattern").length;
      if (rule.kind === "pattern" && patterns >= MAX_SCRUB_PATTERNS) {
        throw new InvalidValueError(
          `Cannot add pattern "${rule.pattern}": a project holds at most ${MAX_SCRUB_PATTERNS} custom patterns; remove one first`,
        );
      }
      scrub.rules.push(rule);
    }
    if (rule.kind === "pattern") {
      scrub.next = Math.max(scrub.next, Number(rule.id.slice(8)));
    }
    project.scrub = scrub;
    if (rule.action === "hash") project.hashKey ??= randomKey();
    return rule;
  });
}

/**
 * Removes a project's rule, named by its id (`key:email`, `pattern:2`) or by
 * what it matches (`email`, the key name or the pattern as given).
 */
export async function removeScrubRule(
  kv: Deno.Kv,
  projectId: string,
  name: string,
): Promise<{ project: Project; rule: ScrubRule }> {
  return await changeRules(kv, projectId, (project) => {
    const rules = scrubRules(project);
    const rule = rules.find((r) => r.id === name) ??
      rules.find((r) =>
        (r.kind === "key" && r.key === name) ||
        (r.kind === "detector" && r.detector === name) ||
        (r.kind === "pattern" && r.pattern === name)
      );
    if (rule === undefined) {
      throw new InvalidValueError(
        `Cannot remove rule "${name}": the project has no such rule (see --list)`,
      );
    }
    project.scrub = {
      rules: rules.filter((r) => r !== rule),
      next: project.scrub?.next ?? 0,
    };
    return rule;
  });
}

/**
 * Changes a project's record with `change`, which edits it in place and
 * returns the rule it added, changed or removed; returns the record as
 * saved and that rule.
 */
async function changeRules(
  kv: Deno.Kv,
  projectId: string,
  change: (project: Project) => ScrubRule,
): Promise<{ project: Project; rule: ScrubRule }> {
  let rule: ScrubRule | undefined;
  const project = await updateProject(kv, projectId, (project) => {
    rule = change(project);
    return project;
  });
  return { project, rule: rule! };
}

const compiled = new WeakMap<Project, Scrubber>();

/**
 * The scrubber of a project's record, compiled once per record read (the
 * defaults alone for `null`, an entry naming no project).
 *
 * @example
 * ```ts
 * const { entry, changed } = scrubberOf(project).scrub(record);
 * ```
 */
export function scrubberOf(project: Project | null): Scrubber {
  if (project === null) return DEFAULTS;
  let scrubber = compiled.get(project);
  if (scrubber === undefined) {
    scrubber = compileScrubber(scrubRules(project), {
      ...(project.hashKey === undefined ? {} : { hashKey: project.hashKey }),
    });
    compiled.set(project, scrubber);
  }
  return scrubber;
}

const DEFAULTS = compileScrubber([]);

/** One line describing a rule: `key "email" → hash`. */
export function describeRule(rule: ScrubRule): string {
  const what = rule.kind === "key"
    ? `key "${rule.key}"`
    : rule.kind === "detector"
    ? `detector ${rule.detector}`
    : `pattern /${rule.pattern}/`;
  return `${what} → ${rule.action}`;
}

/** Entries a dry run reads at most, newest first. */
export const DRY_RUN_ENTRIES = 1000;
/** Changes a dry run lists at most (it counts them all). */
const DRY_RUN_SHOWN = 20;
/** Characters of a value a dry run shows. */
const SHOWN_CHARS = 120;

/** One value a rule set would change, by its path (`data.user.email`). */
export interface ScrubChange {
  entryId: string;
  path: string;
  before: string;
  after: string;
}

/** What {@linkcode dryRunScrub} found. */
export interface DryRun {
  /** Entries read. */
  read: number;
  /** Entries the rules would change. */
  changed: number;
  /** The first changes, at most 20. */
  changes: ScrubChange[];
}

/**
 * What `rules` (the defaults with them) would change in a project's most
 * recent stored entries, without changing anything. A rule that hashes is
 * shown with a key of the dry run's own when the project has none yet.
 *
 * @example
 * ```ts
 * const run = await dryRunScrub(kv, project, [...scrubRules(project), rule]);
 * ```
 */
export async function dryRunScrub(
  kv: Deno.Kv,
  project: Project,
  rules: ScrubRule[],
  options: { limit?: number } = {},
): Promise<DryRun> {
  const scrubber = compileScrubber(rules, {
    hashKey: project.hashKey ?? randomKey(),
  });
  const run: DryRun = { read: 0, changed: 0, changes: [] };
  for await (
    const record of listLogs(kv, project.id, {
      reverse: true,
      limit: options.limit ?? DRY_RUN_ENTRIES,
    })
  ) {
    run.read++;
    const result = scrubber.scrub(record);
    if (!result.changed) continue;
    run.changed++;
    for (const member of ["data", "context", "device"] as const) {
      diff(record[member], result.entry[member], member, (path, a, b) => {
        if (run.changes.length >= DRY_RUN_SHOWN) return;
        run.changes.push({
          entryId: record.id,
          path,
          before: shown(a),
          after: shown(b),
        });
      });
    }
  }
  return run;
}

/**
 * A dry run of the project's saved rules with `input` added (or replacing
 * the saved rule of the same id); of the saved rules alone without one.
 * Checks `input` as {@linkcode addScrubRule} would, and saves nothing.
 *
 * @example
 * ```ts
 * const { rule, run } = await dryRunRule(kv, project, { kind: "detector", detector: "email" });
 * ```
 */
export async function dryRunRule(
  kv: Deno.Kv,
  project: Project,
  input: ScrubRuleInput | undefined,
): Promise<{ rule?: ScrubRule; run: DryRun }> {
  const rules = scrubRules(project);
  const rule = input && prepareRule(input, project);
  const tried = rule ? [...rules.filter((r) => r.id !== rule.id), rule] : rules;
  const run = await dryRunScrub(kv, project, tried);
  return rule ? { rule, run } : { run };
}

/** The audit log's detail of a change of `rule`: `key:email: key "email" → hash`. */
export function ruleAuditDetail(rule: ScrubRule): string {
  return `${rule.id}: ${describeRule(rule)}`;
}

function shown(value: unknown): string {
  const text = value === undefined ? "(absent)" : JSON.stringify(value);
  return text.length > SHOWN_CHARS ? text.slice(0, SHOWN_CHARS) + "…" : text;
}

/** Calls `fn` for each path whose value differs between `a` and `b`. */
function diff(
  a: unknown,
  b: unknown,
  path: string,
  fn: (path: string, a: unknown, b: unknown) => void,
): void {
  if (a === b) return;
  const objects = typeof a === "object" && a !== null &&
    typeof b === "object" && b !== null;
  if (!objects) return fn(path, a, b);
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  for (const key of new Set([...Object.keys(ra), ...Object.keys(rb)])) {
    diff(ra[key], rb[key], `${path}.${key}`, fn);
  }
}

/** What follows a line's id. */
const LEVEL = '","level":';

/**
 * An accepted record scrubbed by its project's rules, with its line when
 * known (db/storage/lines.ts): a line the scrubber's trigger passes over is
 * kept as it is, the fast path of nearly every entry; a record that changes
 * loses its line, to be encoded again from the scrubbed record.
 *
 * @example
 * ```ts
 * const { record: stored, line: cut } = scrubAccepted(project, record, line);
 * ```
 */
export function scrubAccepted<T extends ScrubTarget>(
  project: Project | null,
  record: T,
  line: string | undefined,
): { record: T; line: string | undefined } {
  const scrubber = scrubberOf(project);
  // The id that starts a line (db/storage/lines.ts) is not the sender's: its
  // digits would pass the card trigger in one line out of six.
  if (
    line !== undefined && !scrubber.candidate(line.slice(line.indexOf(LEVEL)))
  ) {
    return { record, line };
  }
  const result = scrubber.scrub(record);
  return result.changed
    ? { record: result.entry, line: undefined }
    : { record, line };
}
