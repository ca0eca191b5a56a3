/**
 * The units of the durations people type (`500ms`, `30s`, `15m`, `24h`,
 * `7d`, `2w`), shared by the commands, the read API and the alert rules so
 * that a unit means the same everywhere. Each reader keeps its own grammar
 * (which units, whether they combine); only the lengths live here.
 *
 * @module
 */

/**
 * Milliseconds in one of each unit.
 *
 * @example
 * ```ts
 * 15 * DURATION_UNIT_MS["m"]!; // 900000
 * ```
 */
export const DURATION_UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 7 * 86_400_000,
};
