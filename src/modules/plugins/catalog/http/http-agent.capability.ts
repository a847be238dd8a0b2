import { Capability, CapabilityManifest, ExecutionError } from '../../domain/plugin';
import { HttpClient, MAX_RESPONSE_BYTES } from '../http-client';
import { isSuccess, jsonPayload, parseJsonBody } from '../json-body';
import { fromOutboundError } from '../outbound-error.mapper';
import { headersSchema, installHeaders, mergeHeaders } from './http-headers';

interface HttpAgentConfig {
  url: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export const httpAgentManifest: CapabilityManifest = {
  name: 'agent',
  description:
    'A remote agent: POSTs the input as JSON (with an Idempotency-Key stable across retries) and takes the JSON reply as the output.',
  configSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['url'],
    properties: {
      url: { type: 'string', format: 'uri', maxLength: 2048 },
      headers: headersSchema,
      timeoutMs: { type: 'integer', minimum: 1, maximum: 3_600_000, description: 'Never above the execution timeout.' },
    },
  },
};

export function httpAgent(client: HttpClient): Capability {
  return {
    async execute({ pluginConfig, config, input, signal, timeoutMs, idempotencyKey }) {
      const { url, headers, timeoutMs: ownTimeoutMs } = config as unknown as HttpAgentConfig;
      const payload = jsonPayload(input);
      const fixed = { ...payload.headers, accept: 'application/json', 'idempotency-key': idempotencyKey };
      const response = await client
        .request({
          method: 'POST',
          url,
          headers: mergeHeaders(installHeaders(pluginConfig, url), headers, fixed),
          body: payload.body,
          signal,
          timeoutMs: Math.min(ownTimeoutMs ?? timeoutMs, timeoutMs),
          maxResponseBytes: MAX_RESPONSE_BYTES,
          maxRedirects: 0,
        })
        .catch((error: unknown) => {
          throw fromOutboundError(error, signal, 'the agent');
        });
      if (!isSuccess(response.status)) throw new ExecutionError('UPSTREAM_ERROR', `Agent answered ${response.status}`);
      const reply = parseJsonBody(response.body);
      if (!reply) throw new ExecutionError('INVALID_OUTPUT', `Agent answered ${response.status} without a JSON body`);
      return reply.value;
    },
  };
}
