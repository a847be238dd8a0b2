/**
 * How deep runs and executions may start one another, across both kinds: a run or an execution
 * started on its own is at depth 0; a child run, and what an agent's tool call starts (another
 * agent's execution, a workflow's run), is one deeper than what started it. Nothing starts
 * anything deeper than this.
 */
export const MAX_NESTING_DEPTH = 5;
