/**
 * What the explorer reads entries with: the query module, the same one the
 * operator commands use (docs/query.md).
 *
 * @module
 */
export * from "../db/query/mod.ts";
