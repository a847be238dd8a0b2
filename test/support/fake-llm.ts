import type { ServerResponse } from 'node:http';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParams } from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import { RecordedRequest, sendJson, startLoopbackServer } from './loopback-server';

/** The usage every reply reports unless told otherwise. */
export const USAGE: CompletionUsage = { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 };
/** Fixed, so replies compare equal across runs. */
const CREATED = 1_700_000_000;

/** An OpenAI chat.completion body whose one choice says `content`. */
export function completion(content: unknown, extra: Record<string, unknown> = {}) {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    model: 'served-model',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: USAGE,
    ...extra,
  };
}

/** How the fake answers a chat completion request. */
export type LlmReply = (req: RecordedRequest, res: ServerResponse) => void;

/** Answers 200 with a completion saying `content`. */
export const answer =
  (content: unknown, extra: Record<string, unknown> = {}): LlmReply =>
  (_req, res) =>
    sendJson(res, 200, completion(content, extra));

/** Answers `status` with the JSON `body`. */
export const respond =
  (status: number, body: unknown): LlmReply =>
  (_req, res) =>
    sendJson(res, status, body);

/** A tool call to answer with; `arguments` that are not a string are sent as their JSON. */
export interface ScriptedCall {
  id: string;
  name: string;
  arguments: unknown;
}

/** A non-streamed completion that calls `calls` (in parallel when several), with no content. */
export function toolCallCompletion(calls: ScriptedCall[], usage: CompletionUsage = USAGE): ChatCompletion {
  const tool_calls = calls.map((call) => ({
    id: call.id,
    type: 'function' as const,
    function: { name: call.name, arguments: argumentsText(call.arguments) },
  }));
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: CREATED,
    model: 'served-model',
    choices: [
      { index: 0, message: { role: 'assistant', content: null, refusal: null, tool_calls }, finish_reason: 'tool_calls', logprobs: null },
    ],
    usage,
  };
}

/** Answers 200 with a completion that calls `calls`. */
export const toolCalls =
  (calls: ScriptedCall[], usage?: CompletionUsage): LlmReply =>
  (_req, res) =>
    sendJson(res, 200, toolCallCompletion(calls, usage));

export interface StreamedParts {
  content?: string;
  toolCalls?: ScriptedCall[];
  usage?: CompletionUsage;
}

/**
 * The chunks OpenAI streams for a reply: the role first, the content in `pieces` deltas, each
 * tool call's id and name in its first delta (with its own `index`) and its arguments in
 * `pieces` more, a chunk with the finish reason, then the usage in a chunk without choices.
 */
export function streamChunks({ content = '', toolCalls: calls = [], usage = USAGE }: StreamedParts, pieces = 3): ChatCompletionChunk[] {
  const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk' as const, created: CREATED, model: 'served-model', usage: null };
  const chunk = (delta: ChatCompletionChunk.Choice.Delta, finish_reason: ChatCompletionChunk.Choice['finish_reason'] = null) => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason, logprobs: null }],
  });
  return [
    chunk({ role: 'assistant', content: '' }),
    ...split(content, pieces).map((piece) => chunk({ content: piece })),
    ...calls.flatMap((call, index) => [
      chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }),
      ...split(argumentsText(call.arguments), pieces).map((piece) => chunk({ tool_calls: [{ index, function: { arguments: piece } }] })),
    ]),
    chunk({}, calls.length > 0 ? 'tool_calls' : 'stop'),
    { ...base, choices: [], usage },
  ];
}

/** Answers with the reply streamed as OpenAI streams it (see streamChunks). */
export const streamed = (parts: StreamedParts, options: { pieces?: number } = {}): LlmReply =>
  eventStream(streamChunks(parts, options.pieces));

/**
 * Answers 200 `text/event-stream`: each event as `data: <its JSON>` (a string as is), then
 * `data: [DONE]` unless `done` is false. The bytes go out `writeBytes` at a time (24 by default),
 * a tick apart, so the client reads lines, events and characters split anywhere.
 */
export const eventStream =
  (events: unknown[], { done = true, writeBytes = 24 }: { done?: boolean; writeBytes?: number } = {}): LlmReply =>
  (_req, res) => {
    const lines = events.map((event) => `data: ${typeof event === 'string' ? event : JSON.stringify(event)}\n\n`);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    writeSlowly(res, Buffer.from(lines.join('') + (done ? 'data: [DONE]\n\n' : '')), writeBytes);
  };

/** What the service sent in a request: the chat-completions body. */
export function sentBody(request: RecordedRequest): ChatCompletionCreateParams {
  return JSON.parse(request.body) as ChatCompletionCreateParams;
}

export interface FakeLlm {
  /** What to configure as the plugin's baseUrl: `http://127.0.0.1:<port>/v1`, no trailing slash. */
  baseUrl: string;
  /** Every request it received, on any path. */
  requests: RecordedRequest[];
  /** How it answers `POST <baseUrl>/chat/completions` once the script is used up; replace it to change the next answers. */
  reply: LlmReply;
  /** Answers the next requests with `replies`, one each in order (replacing what was left of the last script), then falls back to `reply`. */
  script(...replies: LlmReply[]): void;
  close(): Promise<void>;
}

/**
 * An OpenAI-compatible endpoint on 127.0.0.1: `POST /v1/chat/completions` is answered by the
 * script, then by `reply` (by default the completion "Hello there"); anything else gets 404.
 */
export async function startFakeLlm(reply: LlmReply = answer('Hello there')): Promise<FakeLlm> {
  const scripted: LlmReply[] = [];
  const server = await startLoopbackServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return sendJson(res, 404, { error: { message: 'no route' } });
    (scripted.shift() ?? fake.reply)(req, res);
  });
  const fake: FakeLlm = {
    baseUrl: `${server.url}/v1`,
    requests: server.requests,
    reply,
    script: (...replies) => void scripted.splice(0, scripted.length, ...replies),
    close: () => server.close(),
  };
  return fake;
}

function writeSlowly(res: ServerResponse, bytes: Buffer, size: number, from = 0): void {
  if (res.destroyed) return;
  if (from >= bytes.length) return void res.end();
  res.write(bytes.subarray(from, from + size));
  setImmediate(() => writeSlowly(res, bytes, size, from + size));
}

function argumentsText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** `text` in `pieces` parts as even as can be (fewer when it is shorter), never splitting a character. */
function split(text: string, pieces: number): string[] {
  const characters = [...text];
  const size = Math.max(1, Math.ceil(characters.length / pieces));
  const parts: string[] = [];
  for (let at = 0; at < characters.length; at += size) parts.push(characters.slice(at, at + size).join(''));
  return parts;
}
