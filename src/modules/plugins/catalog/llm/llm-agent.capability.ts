import { storable } from '../../../../shared/json/storable';
import { tenantSchemaProblems, tenantValueProblems } from '../../../../shared/json-schema/json-schema.validator';
import { AgentLoopPorts, JournalCall, JournalTurn, ModelReply, ToolResult } from '../../domain/agent-loop';
import { Capability, CapabilityManifest, ExecutionError, JsonSchema } from '../../domain/plugin';
import { HttpClient } from '../http-client';
import { LlmInstallConfig, redacted, unfenced } from './chat-completion';
import { ChatMessage, modelTurn } from './model-turn';
import { renderPrompt } from './prompt.template';

/** Characters of a tool's output the model is sent; the rest is cut, with a marker saying how much. */
export const MAX_TOOL_CONTENT = 16_384;

export const LLM_AGENT_LIMITS = {
  maxTurns: { min: 1, max: 50, default: 10 },
  maxTokens: { min: 1, max: 10_000_000, default: 50_000 },
  maxParallelToolCalls: { min: 1, max: 32, default: 8 },
  tools: 64,
} as const;

export interface LlmAgentConfig {
  systemPrompt: string;
  promptTemplate?: string;
  model?: string;
  temperature?: number;
  tools?: Array<Record<string, unknown>>;
  maxTurns?: number;
  maxTokens?: number;
  maxParallelToolCalls?: number;
  output?: { schema: JsonSchema };
}

/** What a finished conversation answers. */
export interface LlmAgentOutput {
  text?: string;
  json?: unknown;
  usage: { promptTokens: number; completionTokens: number; totalTokens: number };
  turns: number;
  toolCalls: number;
  model: string;
}

export const llmAgentManifest: CapabilityManifest = {
  name: 'agent',
  description:
    'A model that calls tools in a loop until it can answer: plugin actions, other agents and workflows of the organization. ' +
    'Each model turn and tool call is committed, so a crash resumes the conversation without asking the model or running a tool again. ' +
    'The user message is `promptTemplate` filled from the input (default: the input itself). ' +
    'Output: `{ text }`, or `{ json }` with `output.schema`, with `usage`, `turns`, `toolCalls` and `model`.',
  usesTools: true,
  configSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['systemPrompt'],
    properties: {
      systemPrompt: { type: 'string', minLength: 1, maxLength: 100_000 },
      promptTemplate: { type: 'string', minLength: 1, maxLength: 100_000, description: 'Default: the input (as JSON unless a string).' },
      model: { type: 'string', minLength: 1, maxLength: 256, description: "Defaults to the installation's defaultModel." },
      temperature: { type: 'number', minimum: 0, maximum: 2 },
      tools: {
        type: 'array',
        maxItems: LLM_AGENT_LIMITS.tools,
        description:
          'Each `{ "action": "<plugin>.<action>", "with"?, "parameters" }`, `{ "agent": "<id>" }` or `{ "workflow": "<id>" }`, ' +
          'with an optional `name`, `description` and `parameters` (JSON Schema of its input).',
        items: {
          type: 'object',
          properties: {
            name: { type: 'string', pattern: '^[a-zA-Z0-9_-]{1,64}$' },
            description: { type: 'string', maxLength: 4096 },
            parameters: { type: 'object' },
          },
        },
      },
      maxTurns: { type: 'integer', minimum: LLM_AGENT_LIMITS.maxTurns.min, maximum: LLM_AGENT_LIMITS.maxTurns.max, default: 10 },
      maxTokens: { type: 'integer', minimum: LLM_AGENT_LIMITS.maxTokens.min, maximum: LLM_AGENT_LIMITS.maxTokens.max, default: 50_000 },
      maxParallelToolCalls: {
        type: 'integer',
        minimum: LLM_AGENT_LIMITS.maxParallelToolCalls.min,
        maximum: LLM_AGENT_LIMITS.maxParallelToolCalls.max,
        default: LLM_AGENT_LIMITS.maxParallelToolCalls.default,
        description: 'Tool calls one turn may start; the calls a turn asks for beyond them are refused to the model (TOOL_CALL_LIMIT).',
      },
      output: {
        type: 'object',
        additionalProperties: false,
        required: ['schema'],
        properties: {
          schema: { type: 'object', description: 'JSON Schema the answer must match (one repair turn, then INVALID_OUTPUT).' },
        },
      },
    },
  },
};

export function llmAgent(client: HttpClient): Capability {
  return {
    async execute({ pluginConfig, config, input, signal, timeoutMs, agentLoop }): Promise<LlmAgentOutput> {
      if (!agentLoop) throw new ExecutionError('INVALID_INPUT', 'llm.agent runs only as an execution of an agent');
      const install = pluginConfig as unknown as LlmInstallConfig;
      const conversation = new Conversation(
        client,
        install,
        config as unknown as LlmAgentConfig,
        agentLoop,
        signal,
        Date.now() + timeoutMs,
      );
      try {
        return await conversation.run(input);
      } catch (error) {
        throw redacted(error, install.apiKey);
      }
    },
    checkConfig(config) {
      const schema = (config as unknown as LlmAgentConfig).output?.schema;
      return schema ? tenantSchemaProblems(schema, 'output.schema').map((d) => ({ path: d.path, message: d.message })) : [];
    },
  };
}

/**
 * One execution's conversation. Every decision is made from the committed turns, so an attempt
 * after a crash picks up where the last commit left it: the turns it finds are not asked again,
 * their finished calls not run again, and their unfinished calls run again (same idempotency key).
 */
class Conversation {
  private readonly maxTurns: number;
  private readonly maxTokens: number;
  private readonly maxParallel: number;
  private readonly model: string;

  constructor(
    private readonly client: HttpClient,
    private readonly install: LlmInstallConfig,
    private readonly config: LlmAgentConfig,
    private readonly ports: AgentLoopPorts,
    private readonly signal: AbortSignal,
    private readonly deadline: number,
  ) {
    this.maxTurns = config.maxTurns ?? LLM_AGENT_LIMITS.maxTurns.default;
    this.maxTokens = config.maxTokens ?? LLM_AGENT_LIMITS.maxTokens.default;
    this.maxParallel = config.maxParallelToolCalls ?? LLM_AGENT_LIMITS.maxParallelToolCalls.default;
    this.model = config.model ?? install.defaultModel;
  }

  async run(input: unknown): Promise<LlmAgentOutput> {
    const turns = await this.ports.journal.load();
    for (;;) {
      const last = turns.at(-1);
      if (last) {
        const used = tokensOf(turns);
        if (used > this.maxTokens)
          throw new ExecutionError('AGENT_TOKEN_LIMIT', `The conversation used ${used} tokens, more than maxTokens (${this.maxTokens})`);
        if (last.reply.toolCalls.length) {
          if (last.turn >= this.maxTurns)
            throw new ExecutionError(
              'AGENT_TURN_LIMIT',
              `Turn ${last.turn} asked for tools, and maxTurns (${this.maxTurns}) allows no turn after it`,
            );
          await this.runCalls(last);
        } else if (!last.repair) return this.answer(last, turns);
      }
      turns.push(await this.ask(input, turns));
    }
  }

  /** Asks the model for the next turn and commits it, with the calls it starts. */
  private async ask(input: unknown, turns: JournalTurn[]): Promise<JournalTurn> {
    const n = turns.length + 1;
    const startedAt = new Date();
    const reply = await modelTurn(this.client, {
      baseUrl: this.install.baseUrl,
      apiKey: this.install.apiKey,
      model: this.model,
      temperature: this.config.temperature,
      messages: this.messages(input, turns),
      tools: this.ports.tools,
      signal: this.signal,
      timeoutMs: Math.max(1, this.deadline - Date.now()),
      onDelta: (text) => this.ports.delta(n, text),
    });
    const finishedAt = new Date();
    const turn: JournalTurn = { turn: n, reply, repair: null, startedAt, finishedAt, calls: [] };
    const withinBounds = n < this.maxTurns && tokensOf([...turns, turn]) <= this.maxTokens;
    if (reply.toolCalls.length && withinBounds)
      turn.calls = reply.toolCalls.map((call, i) =>
        i < this.maxParallel ? startedCall(call, finishedAt) : refusedCall(call, finishedAt, this.maxParallel),
      );
    else if (!reply.toolCalls.length && withinBounds && !turns.some((t) => t.repair)) turn.repair = this.repairOf(reply);
    // The model's text and its calls' arguments as the journal can hold them (no lone surrogate, no NUL).
    const kept = storable(turn);
    await this.ports.journal.commitTurn(kept);
    return kept;
  }

  /** Runs the turn's unfinished calls in parallel, committing each as it ends. */
  private async runCalls(turn: JournalTurn): Promise<void> {
    await Promise.all(
      turn.calls
        .filter((call) => !call.result)
        .map(async (call) => {
          const result = storable(
            await this.ports.callTool({ turn: turn.turn, callId: call.callId, name: call.name, arguments: call.arguments }, this.signal),
          );
          call.finishedAt = new Date();
          await this.ports.journal.commitCall(turn.turn, call.callId, result, call.finishedAt);
          call.result = result;
        }),
    );
  }

  /** The message that asks for a repair of an answer that does not match the output schema; null when it matches. */
  private repairOf(reply: ModelReply): string | null {
    const problems = this.outputProblems(reply.content);
    if (!problems) return null;
    return `Your answer does not match the required JSON Schema: ${problems}. Answer again with only the JSON value.`;
  }

  private outputProblems(content: string | null): string | null {
    const schema = this.config.output?.schema;
    if (!schema) return null;
    const parsed = parseJson(content ?? '');
    if (!parsed.ok) return 'it is not JSON';
    const details = tenantValueProblems(schema, parsed.value, 'answer');
    return details.length ? details.map((d) => `${d.path}: ${d.message}`).join('; ') : null;
  }

  private answer(last: JournalTurn, turns: JournalTurn[]): LlmAgentOutput {
    const content = last.reply.content ?? '';
    const summary = {
      usage: usageOf(turns),
      turns: turns.length,
      toolCalls: turns.reduce((sum, t) => sum + t.calls.length, 0),
      model: last.reply.model,
    };
    if (!this.config.output) return { text: content, ...summary };
    const problems = this.outputProblems(content);
    if (problems) throw new ExecutionError('INVALID_OUTPUT', `The answer does not match output.schema after a repair turn: ${problems}`);
    return { json: (parseJson(content) as { value: unknown }).value, ...summary };
  }

  /** The whole conversation so far, as the model is sent it: the same for every attempt. */
  private messages(input: unknown, turns: JournalTurn[]): ChatMessage[] {
    const messages: ChatMessage[] = [
      { role: 'system', content: this.systemPrompt() },
      { role: 'user', content: this.config.promptTemplate ? renderPrompt(this.config.promptTemplate, input) : asText(input) },
    ];
    for (const turn of turns) {
      const { content, toolCalls } = turn.reply;
      messages.push({
        role: 'assistant',
        content,
        ...(toolCalls.length
          ? {
              tool_calls: toolCalls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      });
      for (const call of turn.calls) messages.push({ role: 'tool', tool_call_id: call.callId, content: toolContent(call.result) });
      if (turn.repair) messages.push({ role: 'user', content: turn.repair });
    }
    return messages;
  }

  private systemPrompt(): string {
    const schema = this.config.output?.schema;
    if (!schema) return this.config.systemPrompt;
    return `${this.config.systemPrompt}\n\nWhen you answer, answer with only a JSON value that matches this JSON Schema:\n${JSON.stringify(schema)}`;
  }
}

/** A call of a new turn: arguments that are not JSON are answered at once, without running the tool. */
/** A call past the turn's `maxParallelToolCalls`: committed with its refusal, never run; the model reads why. */
function refusedCall(call: { id: string; name: string; arguments: string }, at: Date, max: number): JournalCall {
  const refusal: ToolResult = {
    status: 'failed',
    error: {
      code: 'TOOL_CALL_LIMIT',
      message: `A turn may start at most ${max} tool calls; this one was not run: ask for it again in the next turn`,
    },
  };
  return { ...startedCall(call, at), result: refusal, finishedAt: at };
}

function startedCall(call: { id: string; name: string; arguments: string }, at: Date): JournalCall {
  const parsed = parseJson(call.arguments.trim() === '' ? '{}' : call.arguments);
  const result: ToolResult | null = parsed.ok
    ? null
    : { status: 'failed', error: { code: 'INVALID_ARGUMENTS', message: 'The arguments are not JSON; send a JSON object' } };
  return {
    callId: call.id,
    name: call.name,
    arguments: parsed.ok ? parsed.value : call.arguments,
    result,
    startedAt: at,
    finishedAt: result ? at : null,
  };
}

/** A tool's result as the model reads it, cut to MAX_TOOL_CONTENT characters with a marker. */
export function toolContent(result: ToolResult | null): string {
  const text =
    result?.status === 'succeeded'
      ? typeof result.output === 'string'
        ? result.output
        : JSON.stringify(result.output ?? null)
      : JSON.stringify({ error: result?.error ?? { code: 'TOOL_NOT_RUN', message: 'The tool did not run' } });
  if (text.length <= MAX_TOOL_CONTENT) return text;
  return `${text.slice(0, MAX_TOOL_CONTENT)}\n[truncated: ${text.length - MAX_TOOL_CONTENT} of ${text.length} characters left out]`;
}

function tokensOf(turns: JournalTurn[]): number {
  return turns.reduce((sum, t) => sum + t.reply.usage.totalTokens, 0);
}

function usageOf(turns: JournalTurn[]): LlmAgentOutput['usage'] {
  const usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  for (const { reply } of turns) {
    usage.promptTokens += reply.usage.promptTokens;
    usage.completionTokens += reply.usage.completionTokens;
    usage.totalTokens += reply.usage.totalTokens;
  }
  return usage;
}

function asText(input: unknown): string {
  return typeof input === 'string' ? input : JSON.stringify(input ?? null);
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(unfenced(text.trim())) as unknown };
  } catch {
    return { ok: false };
  }
}
