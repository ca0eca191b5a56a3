/**
 * The error of a malformed query, shared by the query syntax (parse.ts) and
 * the aggregation pipes that may end it (pipe.ts).
 *
 * @module
 */

/** A malformed query; `column` is 1-based. */
export class QuerySyntaxError extends Error {
  override name = "QuerySyntaxError";
  column: number;
  /** The problem, without the column. */
  detail: string;
  constructor(column: number, detail: string) {
    super(`Cannot parse query at column ${column}: ${detail}`);
    this.column = column;
    this.detail = detail;
  }
}
