import { Capability, CapabilityManifest, ExecutionError } from '../../domain/plugin';
import { HttpClient, MAX_RESPONSE_BYTES } from '../http-client';
import { isSuccess, jsonPayload, parseJsonBody } from '../json-body';
import { fromOutboundError } from '../outbound-error.mapper';
import {
  chatRequestBody,
  completionsUrl,
  LlmChatConfig,
  LlmChatOutput,
  LlmInstallConfig,
  readChatReply,
  redacted,
  upstreamMessage,
} from './chat-completion';
import { renderPrompt } from './prompt.template';

export const llmChatManifest: CapabilityManifest = {
  name: 'chat',
  description:
    'One chat completion. The user message is `promptTemplate` with `{{path.to.field}}` filled from the input (`{{input}}`: the whole input). ' +
    'Output: `{ text }` or `{ json }`, with `usage`, `model` and `finishReason`.',
  configSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['promptTemplate'],
    properties: {
      systemPrompt: { type: 'string', maxLength: 100_000 },
      promptTemplate: { type: 'string', minLength: 1, maxLength: 100_000 },
      model: { type: 'string', minLength: 1, maxLength: 256, description: "Defaults to the installation's defaultModel." },
      temperature: { type: 'number', minimum: 0, maximum: 2 },
      maxTokens: { type: 'integer', minimum: 1, maximum: 32000 },
      output: { type: 'string', enum: ['text', 'json'], default: 'text' },
    },
  },
};

export function llmChat(client: HttpClient): Capability {
  return {
    async execute({ pluginConfig, config, input, signal, timeoutMs }): Promise<LlmChatOutput> {
      const { baseUrl, apiKey, defaultModel } = pluginConfig as unknown as LlmInstallConfig;
      const chat = config as unknown as LlmChatConfig;
      const model = chat.model ?? defaultModel;
      const payload = jsonPayload(chatRequestBody(chat, model, renderPrompt(chat.promptTemplate, input)));
      try {
        const response = await client
          .request({
            method: 'POST',
            url: completionsUrl(baseUrl),
            headers: { ...payload.headers, accept: 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
            body: payload.body,
            signal,
            timeoutMs,
            maxResponseBytes: MAX_RESPONSE_BYTES,
            maxRedirects: 0,
          })
          .catch((error: unknown) => {
            throw fromOutboundError(error, signal, 'the LLM endpoint');
          });
        if (!isSuccess(response.status)) throw new ExecutionError('UPSTREAM_ERROR', upstreamMessage(response.status));
        const reply = parseJsonBody(response.body);
        if (!reply) throw new ExecutionError('INVALID_OUTPUT', 'The LLM reply is not JSON');
        return readChatReply(reply.value, chat, model);
      } catch (error) {
        throw redacted(error, apiKey);
      }
    },
  };
}
