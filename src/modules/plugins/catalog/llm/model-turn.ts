import type { ModelReply, ToolSpec } from '../../domain/agent-loop';
import { ExecutionError } from '../../domain/plugin';
import { HttpClient } from '../http-client';
import { isSuccess, jsonPayload } from '../json-body';
import { fromOutboundError } from '../outbound-error.mapper';
import { completionsUrl, redacted, upstreamMessage } from './chat-completion';
import { ChatStream, readCompletion } from './model-reply';

/** A message of the OpenAI chat-completions wire format. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

export interface ModelTurnRequest {
  /** The API root, e.g. `http://vllm:8000/v1`. */
  baseUrl: string;
  /** Sent as a Bearer token; never in an error message. */
  apiKey?: string;
  model: string;
  temperature?: number;
  messages: ChatMessage[];
  tools: ToolSpec[];
  signal: AbortSignal;
  timeoutMs: number;
  /** Each piece of the reply's content as it streams (not called for a reply that is not streamed). */
  onDelta?: (text: string) => void;
}

/**
 * Largest streamed reply read (8 MiB): a stream repeats the envelope of every chunk around a
 * few characters of text, so it runs several times larger than the same reply as one JSON body.
 */
const MAX_STREAM_BYTES = 8 * 1024 * 1024;

/**
 * One model turn against an OpenAI-compatible chat-completions endpoint. It asks for a stream
 * and reads it as it arrives; a server that answers one JSON completion instead is read whole.
 * Failures are ExecutionErrors, none of which quotes the API key.
 */
export async function modelTurn(client: HttpClient, request: ModelTurnRequest): Promise<ModelReply> {
  const { apiKey, signal } = request;
  const payload = jsonPayload(turnRequestBody(request));
  const stream = new ChatStream(request.onDelta);
  try {
    const response = await client
      .request({
        method: 'POST',
        url: completionsUrl(request.baseUrl),
        headers: {
          ...payload.headers,
          accept: 'text/event-stream, application/json',
          ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
        },
        body: payload.body,
        signal,
        timeoutMs: request.timeoutMs,
        maxResponseBytes: MAX_STREAM_BYTES,
        maxRedirects: 0,
        // A conversation asks the same server turn after turn: its connections are kept (each request still checked).
        keepAlive: true,
        // Fed whatever arrives: only an event stream has `data:` lines for it to read.
        onBody: (chunk) => stream.feed(chunk),
      })
      .catch((error: unknown) => {
        throw fromOutboundError(error, signal, 'the LLM endpoint');
      });
    if (!isSuccess(response.status)) throw new ExecutionError('UPSTREAM_ERROR', upstreamMessage(response.status));
    if (isEventStream(response.headers['content-type'])) return stream.reply(request.model);
    return readCompletion(response.body, request.model);
  } catch (error) {
    throw redacted(error, apiKey);
  }
}

function turnRequestBody({ model, messages, tools, temperature }: ModelTurnRequest): Record<string, unknown> {
  return {
    model,
    messages,
    ...(tools.length > 0
      ? { tools: tools.map(({ name, description, parameters }) => ({ type: 'function', function: { name, description, parameters } })) }
      : {}),
    temperature,
    stream: true,
    stream_options: { include_usage: true },
  };
}

function isEventStream(contentType: string | undefined): boolean {
  return (contentType ?? '').split(';', 1)[0].trim().toLowerCase() === 'text/event-stream';
}
