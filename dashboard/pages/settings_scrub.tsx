/**
 * The Scrubbing card of a project's settings: what is scrubbed from its
 * entries before they are stored (docs/privacy.md), the defaults and the
 * project's rules. For an admin, the forms that add a rule (a key, a
 * detector or a pattern, with its action), remove one, and try one first:
 * a dry run over the project's recent entries, shown here, saving nothing.
 *
 * @module
 */
import type { ScrubRuleInput } from "../../db/scrub.ts";
import type { DryRun } from "../../db/scrub.ts";
import { DETECTORS } from "../../domain/detectors.ts";
import {
  DEFAULT_SECRET_KEYS,
  SCRUB_ACTIONS,
  type ScrubRule,
} from "../../domain/scrub.ts";
import { Card, ListTable, type PageContext, PostForm } from "./layout.tsx";
import {
  type FieldError,
  FieldErrorText,
  RemoveButton,
} from "./settings_forms.tsx";

/** A dry run to show: the rule tried, what it would change, the form's value. */
export interface ScrubDryRun {
  rule: ScrubRule;
  run: DryRun;
  value: string;
}

function scrubs(rule: ScrubRule): string {
  return rule.kind === "key"
    ? `values under keys naming "${rule.key}"`
    : rule.kind === "detector"
    ? `${rule.detector} (detector)`
    : `matches of /${rule.pattern}/`;
}

/** Props of {@linkcode ScrubbingSection}. */
interface ScrubbingProps {
  ctx: PageContext;
  rules: ScrubRule[];
  /** The URL of a settings form, by its path under `settings/`. */
  action: (path: string) => string;
  /** Whether the account may change the rules (the forms are shown). */
  editable: boolean;
  error?: FieldError;
  dryRun?: ScrubDryRun;
}

/** The Scrubbing card, for a project's `rules`. */
export function ScrubbingSection(props: ScrubbingProps) {
  const { ctx, rules, editable } = props;
  const card = rules.find((r) => r.id === "detector:card")?.action ??
    "remove";
  return (
    <Card id="scrubbing" titleId="scrubbing-title" title="Scrubbing">
      <ListTable
        class="scrub-rules"
        columns={["Rule", "Scrubs", "Action", ...(editable ? [""] : [])]}
      >
        <tr>
          <td>default</td>
          <td>values under keys naming {DEFAULT_SECRET_KEYS.join(", ")}</td>
          <td>remove</td>
          {editable && <td></td>}
        </tr>
        <tr>
          <td>default</td>
          <td>card numbers (Luhn-valid)</td>
          <td>{card}</td>
          {editable && <td></td>}
        </tr>
        {rules.filter((r) => r.id !== "detector:card").map((rule) => (
          <tr>
            <td>
              <code>{rule.id}</code>
            </td>
            <td>{scrubs(rule)}</td>
            <td>{rule.action}</td>
            {editable && (
              <td>
                <RemoveButton
                  ctx={ctx}
                  action={props.action("scrub/remove")}
                  field="rule"
                  value={rule.id}
                  label={`Remove rule ${rule.id}`}
                />
              </td>
            )}
          </tr>
        ))}
      </ListTable>
      <p class="hint">Applies to entries stored from now on.</p>
      {editable && <RuleForm {...props} />}
      {props.dryRun && <DryRunResult dryRun={props.dryRun} />}
    </Card>
  );
}

/** Adding a rule, or trying it first with a dry run. */
function RuleForm(props: ScrubbingProps) {
  const { error, dryRun } = props;
  const tried = dryRun?.rule;
  const kind: ScrubRuleInput["kind"] = tried?.kind ?? "key";
  return (
    <>
      <PostForm
        ctx={props.ctx}
        action={props.action("scrub/add")}
        class="row"
        id="scrub-form"
      >
        <select name="kind" aria-label="Kind of rule">
          <option value="key" selected={kind === "key"}>key name</option>
          <option value="detector" selected={kind === "detector"}>
            detector
          </option>
          <option value="pattern" selected={kind === "pattern"}>
            pattern
          </option>
        </select>
        <input
          name="value"
          required
          placeholder={`user_email, or ${DETECTORS.join("/")}, or a regex`}
          aria-label="Key, detector or pattern"
          value={error?.value ?? dryRun?.value ?? ""}
          aria-invalid={error ? "true" : undefined}
        />
        <select name="action" aria-label="Action">
          {SCRUB_ACTIONS.map((a) => (
            <option value={a} selected={a === (tried?.action ?? "remove")}>
              {a}
            </option>
          ))}
        </select>
        <button type="submit">Add rule</button>
        <button
          type="submit"
          class="secondary"
          formaction={props.action("scrub/dry-run")}
        >
          Dry run
        </button>
      </PostForm>
      <p class="hint">
        Detectors:{" "}
        {DETECTORS.join(", ")}. Remove writes "[Filtered]", mask keeps the last
        4 characters, hash is keyed per project. A dry run shows what the rules
        with this one would change in the latest entries, and saves nothing.
      </p>
      <FieldErrorText error={error} />
    </>
  );
}

/** The fields of a dry run's change, one a column: entry, field, before, after. */
const CHANGE_FIELDS = ["entryId", "path", "before", "after"] as const;

/** What a dry run found. */
function DryRunResult(props: { dryRun: ScrubDryRun }) {
  const { rule, run } = props.dryRun;
  return (
    <section id="scrub-dry-run" aria-labelledby="dry-run-title">
      <h3 id="dry-run-title">
        Dry run of <code>{rule.id}</code> ({rule.action}), not saved
      </h3>
      <p>
        Of the latest {run.read} entries, {run.changed} would change.
      </p>
      {run.changes.length > 0 && (
        <ListTable
          class="scrub-changes"
          columns={["Entry", "Field", "Before", "After"]}
        >
          {run.changes.map((change) => (
            <tr>
              {CHANGE_FIELDS.map((field) => (
                <td>
                  <code>{change[field]}</code>
                </td>
              ))}
            </tr>
          ))}
        </ListTable>
      )}
    </section>
  );
}
