/**
 * The contract between an agent kind that calls tools in a loop (`llm.agent`) and the service
 * that runs it. The plugin owns the conversation (its wire format, the bounds, the repair
 * turns); the service owns what must outlive a process: the tools, and the journal of
 * committed steps an attempt resumes from after a crash.
 */

/** A tool as the model is offered it. */
export interface ToolSpec {
  /** `^[a-zA-Z0-9_-]{1,64}$`, unique among the agent's tools. */
  name: string;
  description: string;
  /** JSON Schema of the tool's input (the model's arguments). */
  parameters: Record<string, unknown>;
}

/** A tool call as the model asked for it. */
export interface ToolCall {
  /** The model's id of the call, unique within its turn. */
  id: string;
  name: string;
  /** As the model sent them: a JSON text (which may not parse). */
  arguments: string;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** One model reply. */
export interface ModelReply {
  content: string | null;
  toolCalls: ToolCall[];
  usage: TokenUsage;
  /** The model that answered (the server's name for it). */
  model: string;
  finishReason: string | null;
}

export interface ToolFailure {
  code: string;
  message: string;
}

/** How a tool call ended: its output, or an error the model is told about. */
export type ToolResult = { status: 'succeeded'; output: unknown } | { status: 'failed'; error: ToolFailure };

/** A tool call as committed: unfinished (no `result`) when the attempt that ran it ended first. */
export interface JournalCall {
  callId: string;
  name: string;
  /** The arguments parsed, or the model's text where it did not parse. */
  arguments: unknown;
  result: ToolResult | null;
  startedAt: Date;
  finishedAt: Date | null;
}

/** A committed model turn (numbered from 1) with the tool calls it started. */
export interface JournalTurn {
  turn: number;
  reply: ModelReply;
  /** A message sent back to the model after this turn (the output did not match its schema). */
  repair: string | null;
  startedAt: Date;
  finishedAt: Date;
  /** The calls this turn started, in the order the model asked for them. */
  calls: JournalCall[];
}

/**
 * The committed steps of one execution. Every write is committed before the loop goes on, so
 * an attempt that starts after a crash finds every finished turn and tool call here.
 */
export interface AgentJournal {
  /** The turns earlier attempts committed, in order. */
  load(): Promise<JournalTurn[]>;
  /** A finished model turn, with its tool calls about to run (their `result` is null). */
  commitTurn(turn: JournalTurn): Promise<void>;
  /** A finished tool call of a committed turn. */
  commitCall(turn: number, callId: string, result: ToolResult, finishedAt: Date): Promise<void>;
}

/** What the service gives an agent kind that calls tools. */
export interface AgentLoopPorts {
  tools: ToolSpec[];
  journal: AgentJournal;
  /**
   * Runs a tool; never throws for the tool's own failure (that is a `failed` result the model
   * reads). The call's idempotency key is `<executionId>:<turn>:<callId>`, the same on every attempt.
   */
  callTool(call: { turn: number; callId: string; name: string; arguments: unknown }, signal: AbortSignal): Promise<ToolResult>;
  /** Text of turn `turn` as the model streams it (best effort, for live streams). */
  delta(turn: number, text: string): void;
}
