/**
 * The shapes of a project's cost controls, as its record holds them:
 * quota, spike protection and retention rules (docs/privacy.md). The rules
 * that apply them live in db/quota.ts and db/retention_rules.ts.
 *
 * @module
 */

/** A project's quota: either bound may be absent. */
export interface Quota {
  perDay?: number;
  perMinute?: number;
}

/** A project's spike protection. */
export interface SpikeProtection {
  /** A spike is a rate past this multiple of the hourly average. */
  multiple: number;
  /** In a spike, 1 in `keep` info and warning entries is stored. */
  keep: number;
}

/** One retention rule: entries whose level compares so with `level` are kept `days`. */
export interface RetentionRule {
  /** The filter as written, `level<=info`. */
  filter: string;
  op: "<" | "<=" | "=" | ">=" | ">";
  level: string;
  days: number;
}
