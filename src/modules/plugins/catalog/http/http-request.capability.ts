import { Capability, CapabilityManifest, ExecutionError } from '../../domain/plugin';
import { HttpClient, MAX_RESPONSE_BYTES } from '../http-client';
import { isJsonContentType, isSuccess, jsonPayload, parseJsonBody } from '../json-body';
import { fromOutboundError } from '../outbound-error.mapper';
import { headersSchema, installHeaders, mergeHeaders } from './http-headers';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;
const DEFAULT_HEADERS = { accept: 'application/json, text/*;q=0.9, */*;q=0.8' };

interface HttpRequestConfig {
  method: (typeof METHODS)[number];
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
  failOnError?: boolean;
}

export interface HttpRequestOutput {
  status: number;
  headers: Record<string, string>;
  /** Parsed when the response says it is JSON (and parses), else text; null when empty. */
  body: unknown;
}

export const httpRequestManifest: CapabilityManifest = {
  name: 'request',
  description:
    'Sends one HTTP request. The body is `body` from the config as JSON, or else the input as JSON (not for GET and HEAD). ' +
    'Output: `{ status, headers, body }`. A non-2xx status fails the step unless `failOnError` is false.',
  configSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['method', 'url'],
    properties: {
      method: { type: 'string', enum: [...METHODS] },
      url: { type: 'string', format: 'uri', maxLength: 2048 },
      headers: headersSchema,
      body: { description: 'Any JSON value, sent as JSON.' },
      failOnError: { type: 'boolean', default: true },
    },
  },
};

export function httpRequest(client: HttpClient): Capability {
  return {
    async execute({ pluginConfig, config, input, signal, timeoutMs }): Promise<HttpRequestOutput> {
      const { method, url, headers, body, failOnError = true } = config as unknown as HttpRequestConfig;
      const payload = method === 'GET' || method === 'HEAD' ? undefined : 'body' in config ? body : input;
      const json = payload === undefined ? undefined : jsonPayload(payload);
      const response = await client
        .request({
          method,
          url,
          headers: mergeHeaders(DEFAULT_HEADERS, json?.headers, installHeaders(pluginConfig, url), headers),
          body: json?.body,
          signal,
          timeoutMs,
          maxResponseBytes: MAX_RESPONSE_BYTES,
          maxRedirects: 5,
        })
        .catch((error: unknown) => {
          throw fromOutboundError(error, signal, 'the URL');
        });
      if (failOnError && !isSuccess(response.status)) throw new ExecutionError('UPSTREAM_ERROR', `Request answered ${response.status}`);
      return { status: response.status, headers: response.headers, body: readBody(response.body, response.headers['content-type']) };
    },
  };
}

function readBody(body: Buffer, contentType: string | undefined): unknown {
  if (body.length === 0) return null;
  const parsed = isJsonContentType(contentType) ? parseJsonBody(body) : undefined;
  return parsed ? parsed.value : body.toString('utf8');
}
