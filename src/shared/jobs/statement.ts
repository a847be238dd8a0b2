/**
 * One SQL statement and its parameters (`$1` to `$n`): a write handed to another part to run
 * inside its own statement, so both commit together in one round trip (a record and its job).
 */
export interface Statement {
  sql: string;
  params: unknown[];
}
