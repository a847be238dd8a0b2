import { createParser } from 'eventsource-parser';
import type { ModelReply, ToolCall } from '../../domain/agent-loop';
import { ExecutionError } from '../../domain/plugin';
import { MAX_RESPONSE_BYTES } from '../http-client';
import { parseJsonBody } from '../json-body';
import { tokenUsage } from './chat-completion';

/** A tool call as read so far: a stream sends its id and name first, its arguments in pieces. */
interface CallParts {
  id?: string;
  name?: string;
  arguments: string;
}

interface ReplyParts {
  content: string | null;
  calls: CallParts[];
  usage: unknown;
  model: string;
  finishReason: string | null;
}

/**
 * A `chat.completion.chunk` event stream read as it arrives, in chunks split anywhere:
 * the content (each piece handed to `onDelta`), the tool calls by their `index`, the finish
 * reason, the model and the usage, wherever they come. `data: [DONE]` ends it.
 */
export class ChatStream {
  private readonly decoder = new TextDecoder();
  private readonly parser = createParser({ onEvent: ({ data }) => this.read(data) });
  private content = '';
  private readonly calls = new Map<number, CallParts>();
  private finishReason: string | null = null;
  private model: string | undefined;
  private usage: unknown;
  private done = false;
  private failure: ExecutionError | undefined;

  constructor(private readonly onDelta: ((text: string) => void) | undefined) {}

  feed(chunk: Buffer): void {
    this.parser.feed(this.decoder.decode(chunk, { stream: true }));
  }

  /** The reply, once the stream has ended; a stream cut before its finish is an UPSTREAM_ERROR. */
  reply(model: string): ModelReply {
    if (this.failure) throw this.failure;
    if (!this.done && this.finishReason === null) throw new ExecutionError('UPSTREAM_ERROR', 'The LLM stream ended early');
    return assembled({
      content: this.content,
      calls: [...this.calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call),
      usage: this.usage,
      model: this.model ?? model,
      finishReason: this.finishReason,
    });
  }

  /** One event; the first failure stops the reading, and reply() reports it. */
  private read(data: string): void {
    if (this.done || this.failure) return;
    if (data === '[DONE]') {
      this.done = true;
      return;
    }
    const chunk = jsonObject(data);
    if (chunk) this.readChunk(chunk);
    else this.failure = new ExecutionError('INVALID_OUTPUT', 'The LLM stream has an event that is not a JSON object');
  }

  private readChunk(chunk: Record<string, unknown>): void {
    if (chunk.error) {
      this.failure = new ExecutionError('UPSTREAM_ERROR', 'The LLM endpoint reported an error in its stream');
      return;
    }
    this.model = text(chunk.model) ?? this.model;
    // OpenAI sends the usage in a last chunk without choices; some servers put it on the last choice chunk.
    if (typeof chunk.usage === 'object' && chunk.usage !== null) this.usage = chunk.usage;
    const choice = asRecord(list(chunk.choices)[0]);
    this.finishReason = text(choice.finish_reason) ?? this.finishReason;
    const delta = asRecord(choice.delta);
    const piece = text(delta.content);
    if (piece) {
      this.content += piece;
      this.onDelta?.(piece);
    }
    list(delta.tool_calls).forEach((call, position) => this.addCall(call, position));
  }

  private addCall(delta: Record<string, unknown>, position: number): void {
    const index = typeof delta.index === 'number' ? delta.index : position;
    const call = this.calls.get(index) ?? { arguments: '' };
    const fn = asRecord(delta.function);
    call.id ||= text(delta.id);
    call.name ||= text(fn.name);
    call.arguments += text(fn.arguments) ?? '';
    this.calls.set(index, call);
  }
}

/** A plain `chat.completion`, from a server that does not stream. */
export function readCompletion(body: Buffer, model: string): ModelReply {
  if (body.length > MAX_RESPONSE_BYTES) {
    throw new ExecutionError('UPSTREAM_ERROR', `The call to the LLM endpoint failed: the reply exceeds ${MAX_RESPONSE_BYTES} bytes`);
  }
  const parsed = parseJsonBody(body);
  if (!parsed) throw new ExecutionError('INVALID_OUTPUT', 'The LLM reply is neither JSON nor an event stream');
  const reply = asRecord(parsed.value);
  const choice = asRecord(list(reply.choices)[0]);
  const message = asRecord(choice.message);
  return assembled({
    content: text(message.content) ?? null,
    calls: list(message.tool_calls).map((call) => {
      const fn = asRecord(call.function);
      return { id: text(call.id), name: text(fn.name), arguments: argumentsText(fn.arguments) };
    }),
    usage: reply.usage,
    model: text(reply.model) ?? model,
    finishReason: text(choice.finish_reason) ?? null,
  });
}

/** The reply the loop gets: empty content is null, and it must say something or call a tool. */
function assembled({ content, calls, usage, model, finishReason }: ReplyParts): ModelReply {
  const toolCalls = calls.map(toolCall);
  if (!content && toolCalls.length === 0) throw new ExecutionError('INVALID_OUTPUT', 'The LLM reply has neither content nor tool calls');
  return { content: content || null, toolCalls, usage: tokenUsage(usage), model, finishReason };
}

function toolCall({ id, name, arguments: args }: CallParts): ToolCall {
  if (!id || !name) throw new ExecutionError('INVALID_OUTPUT', 'The LLM asked for a tool call without an id or a name');
  return { id, name, arguments: args };
}

/** The arguments as sent; an object (some servers send one) as its JSON text. */
function argumentsText(value: unknown): string {
  if (value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function jsonObject(data: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(data);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

function list(value: unknown): Array<Record<string, unknown>> {
  return Array.isArray(value) ? value.map(asRecord) : [];
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
