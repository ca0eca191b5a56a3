/**
 * The Scrubbing card of a project's settings: what is scrubbed from its
 * entries before they are stored (docs/privacy.md), the defaults and the
 * project's rules. Read-only: rules are changed with
 * `deno task project scrub`, which offers a dry run first.
 *
 * @module
 */
import { DEFAULT_SECRET_KEYS, type ScrubRule } from "../../domain/scrub.ts";
import { Card } from "./layout.tsx";

function scrubs(rule: ScrubRule): string {
  return rule.kind === "key"
    ? `values under keys naming "${rule.key}"`
    : rule.kind === "detector"
    ? `${rule.detector} (detector)`
    : `matches of /${rule.pattern}/`;
}

/** The Scrubbing card, for a project's `rules`. */
export function ScrubbingSection(props: { rules: ScrubRule[] }) {
  const { rules } = props;
  const card = rules.find((r) => r.id === "detector:card")?.action ??
    "remove";
  return (
    <Card id="scrubbing" titleId="scrubbing-title" title="Scrubbing">
      <table>
        <thead>
          <tr>
            <th>Rule</th>
            <th>Scrubs</th>
            <th>Action</th>
          </tr>
        </thead>
        <tbody>
          <tr>
            <td>default</td>
            <td>values under keys naming {DEFAULT_SECRET_KEYS.join(", ")}</td>
            <td>remove</td>
          </tr>
          <tr>
            <td>default</td>
            <td>card numbers (Luhn-valid)</td>
            <td>{card}</td>
          </tr>
          {rules.filter((r) => r.id !== "detector:card").map((rule) => (
            <tr>
              <td>
                <code>{rule.id}</code>
              </td>
              <td>{scrubs(rule)}</td>
              <td>{rule.action}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="hint">
        Applies to entries stored from now on. Change the rules with{" "}
        <code>deno task project scrub</code> (with <code>--dry-run</code>{" "}
        first).
      </p>
    </Card>
  );
}
