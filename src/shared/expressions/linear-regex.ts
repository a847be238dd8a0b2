/**
 * Linear-time regular expressions for tenant patterns: JSONata regex literals, JSON Schema
 * `pattern` and `patternProperties`. They live in the expression thread's file, which can
 * import no sibling; this is their name for the rest of the service.
 */
export { linearRegexProblem, linearRegExpForAjv } from './sandbox-worker';
