import { Plugin } from '../../domain/plugin';
import { HttpClient } from '../http-client';
import { llmAgent, llmAgentManifest } from './llm-agent.capability';
import { llmChat, llmChatManifest } from './llm-chat.capability';

/** `llm.chat` and `llm.agent` against any OpenAI-compatible chat-completions endpoint (vLLM, Ollama, LM Studio, OpenAI). */
export function createLlmPlugin(client: HttpClient): Plugin {
  return {
    manifest: {
      slug: 'llm',
      name: 'LLM',
      version: '1.0.0',
      description:
        'Chat completions from an OpenAI-compatible endpoint, with prompt templates, text or JSON output and token usage, and agents that call tools in a durable loop.',
      configSchema: {
        type: 'object',
        additionalProperties: false,
        required: ['baseUrl', 'defaultModel'],
        properties: {
          baseUrl: { type: 'string', format: 'uri', maxLength: 2048, description: 'API root, e.g. http://vllm:8000/v1' },
          apiKey: { type: 'string', maxLength: 8192, writeOnly: true },
          defaultModel: { type: 'string', minLength: 1, maxLength: 256 },
        },
      },
      secretFields: ['apiKey'],
      secretDestinationFields: ['baseUrl'],
      agentKinds: [llmChatManifest, llmAgentManifest],
      actions: [],
    },
    agentKinds: { chat: llmChat(client), agent: llmAgent(client) },
    actions: {},
  };
}
