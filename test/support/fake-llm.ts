import type { ServerResponse } from 'node:http';
import { RecordedRequest, sendJson, startLoopbackServer } from './loopback-server';

/** An OpenAI chat.completion body whose one choice says `content`. */
export function completion(content: unknown, extra: Record<string, unknown> = {}) {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    model: 'served-model',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
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

export interface FakeLlm {
  /** What to configure as the plugin's baseUrl: `http://127.0.0.1:<port>/v1`, no trailing slash. */
  baseUrl: string;
  /** Every request it received, on any path. */
  requests: RecordedRequest[];
  /** How it answers `POST <baseUrl>/chat/completions`; replace it to change the next answers. */
  reply: LlmReply;
  close(): Promise<void>;
}

/**
 * An OpenAI-compatible endpoint on 127.0.0.1: `POST /v1/chat/completions` is answered by
 * `reply` (by default the completion "Hello there"); anything else gets 404.
 */
export async function startFakeLlm(reply: LlmReply = answer('Hello there')): Promise<FakeLlm> {
  const server = await startLoopbackServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return sendJson(res, 404, { error: { message: 'no route' } });
    fake.reply(req, res);
  });
  const fake: FakeLlm = { baseUrl: `${server.url}/v1`, requests: server.requests, reply, close: () => server.close() };
  return fake;
}
