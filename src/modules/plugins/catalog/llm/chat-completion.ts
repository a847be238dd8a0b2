import type { TokenUsage } from '../../domain/agent-loop';
import { ExecutionError } from '../../domain/plugin';

/** Installation config of the llm plugin. */
export interface LlmInstallConfig {
  baseUrl: string;
  apiKey?: string;
  defaultModel: string;
}

export interface LlmChatConfig {
  systemPrompt?: string;
  promptTemplate: string;
  model?: string;
  temperature?: number;
  maxTokens?: number;
  output?: 'text' | 'json';
}

export interface LlmChatOutput {
  text?: string;
  json?: unknown;
  usage: TokenUsage;
  model: string;
  finishReason: string | null;
}

/** `<baseUrl>/chat/completions`, whether or not baseUrl ends with a slash. */
export function completionsUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  url.pathname = `${withoutTrailingSlashes(url.pathname)}/chat/completions`;
  return url.toString();
}

/** The message of a non-2xx answer (its body is not echoed: it may quote the key). */
export function upstreamMessage(status: number): string {
  if (status === 429) return 'LLM endpoint answered 429 (rate limited)';
  return status >= 500 ? `LLM endpoint answered ${status} (server error)` : `LLM endpoint answered ${status}`;
}

/** Belt and braces: no message leaves with the API key in it (e.g. echoed in a URL). */
export function redacted(error: unknown, apiKey: string | undefined): unknown {
  if (!apiKey || !(error instanceof ExecutionError) || !error.message.includes(apiKey)) return error;
  return new ExecutionError(error.code, error.message.replaceAll(apiKey, '[redacted]'));
}

/** The OpenAI-compatible request body. */
export function chatRequestBody(config: LlmChatConfig, model: string, prompt: string): Record<string, unknown> {
  const messages = [...(config.systemPrompt ? [{ role: 'system', content: config.systemPrompt }] : []), { role: 'user', content: prompt }];
  return {
    model,
    messages,
    temperature: config.temperature,
    max_tokens: config.maxTokens,
    response_format: config.output === 'json' ? { type: 'json_object' } : undefined,
  };
}

interface ChatReply {
  model?: unknown;
  choices?: Array<{ message?: { content?: unknown }; finish_reason?: unknown }>;
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown; total_tokens?: unknown };
}

/** Reads a chat-completions reply; INVALID_OUTPUT when it has no content or its JSON does not parse. */
export function readChatReply(reply: unknown, config: LlmChatConfig, model: string): LlmChatOutput {
  const { choices, usage, model: answeredModel } = (typeof reply === 'object' && reply !== null ? reply : {}) as ChatReply;
  const choice = Array.isArray(choices) ? choices[0] : undefined;
  const content = choice?.message?.content;
  if (typeof content !== 'string') throw new ExecutionError('INVALID_OUTPUT', 'The LLM reply has no message content');
  const result = {
    usage: tokenUsage(usage),
    model: typeof answeredModel === 'string' ? answeredModel : model,
    finishReason: typeof choice?.finish_reason === 'string' ? choice.finish_reason : null,
  };
  return config.output === 'json' ? { json: parseJsonContent(content), ...result } : { text: content, ...result };
}

/** Parses JSON content, tolerating the Markdown code fence some models wrap it in. */
function parseJsonContent(content: string): unknown {
  try {
    return JSON.parse(unfenced(content.trim())) as unknown;
  } catch {
    throw new ExecutionError('INVALID_OUTPUT', 'The LLM reply is not valid JSON');
  }
}

/**
 * The body of a reply fenced as ```` ```json ```` (or a bare ```` ``` ````) ... ```` ``` ````,
 * else the reply itself. Found with indexOf, not a regular expression: the reply is remote
 * text, and a backtracking pattern over "```" and many newlines takes seconds.
 */
export function unfenced(text: string): string {
  const FENCE = '```';
  if (text.length < 2 * FENCE.length || !text.startsWith(FENCE) || !text.endsWith(FENCE)) return text;
  const lineEnd = text.indexOf('\n');
  if (lineEnd < 0 || lineEnd > text.length - FENCE.length) return text;
  const info = text.slice(FENCE.length, lineEnd).trim().toLowerCase();
  if (info !== '' && info !== 'json') return text;
  return text.slice(lineEnd + 1, text.length - FENCE.length);
}

/** An OpenAI `usage` object read leniently: a missing count is 0, a missing total the sum. */
export function tokenUsage(usage: unknown): TokenUsage {
  const counts = (typeof usage === 'object' && usage !== null ? usage : {}) as NonNullable<ChatReply['usage']>;
  const promptTokens = count(counts.prompt_tokens);
  const completionTokens = count(counts.completion_tokens);
  return { promptTokens, completionTokens, totalTokens: count(counts.total_tokens) || promptTokens + completionTokens };
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
}

/** `path` without its trailing slashes (a loop: `/\/+$/` is quadratic over many slashes). */
function withoutTrailingSlashes(path: string): string {
  let end = path.length;
  while (end > 0 && path[end - 1] === '/') end--;
  return path.slice(0, end);
}
