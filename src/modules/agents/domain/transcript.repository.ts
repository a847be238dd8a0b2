import { JournalTurn, TokenUsage, ToolResult } from '../../plugins/domain/agent-loop';

/** A conversation's size and what it cost, for the execution's view. */
export interface TranscriptTotals {
  turns: number;
  toolCalls: number;
  usage: TokenUsage;
}

/**
 * The journal of tool-calling executions (`llm.agent`): each model turn and tool call,
 * committed as it ends. Callers check the execution is the organization's before they read.
 */
export abstract class TranscriptRepository {
  /** Every committed turn of the execution, in order, with its calls. */
  abstract load(executionId: string): Promise<JournalTurn[]>;
  /** Turns after `afterTurn`, at most `limit`, in order. */
  abstract page(executionId: string, afterTurn: number, limit: number): Promise<JournalTurn[]>;
  /** Null when the execution has no turn. */
  abstract totals(executionId: string): Promise<TranscriptTotals | null>;
  /** The turn and its calls in one statement; a turn committed already (by a lost worker) is kept as it was. */
  abstract commitTurn(organizationId: string, executionId: string, turn: JournalTurn): Promise<void>;
  abstract commitCall(executionId: string, turn: number, callId: string, result: ToolResult, finishedAt: Date): Promise<void>;
}
