import { Plugin } from '../../domain/plugin';
import { HttpClient } from '../http-client';
import { httpAgent, httpAgentManifest } from './http-agent.capability';
import { headersSchema, originsSchema } from './http-headers';
import { httpRequest, httpRequestManifest } from './http-request.capability';

/**
 * `http.agent` (a remote agent over HTTP) and `http.request` (a generic request action). Every
 * call goes through `client`, the outbound client that applies the SSRF guard.
 */
export function createHttpPlugin(client: HttpClient): Plugin {
  return {
    manifest: {
      slug: 'http',
      name: 'HTTP',
      version: '1.0.0',
      description: 'Calls remote agents and HTTP APIs. Outbound calls pass the SSRF guard.',
      configSchema: {
        type: 'object',
        additionalProperties: false,
        properties: {
          defaultHeaders: { ...headersSchema, description: 'Sent with every request; per-agent or per-step headers win.' },
          authorization: {
            type: 'string',
            maxLength: 8192,
            writeOnly: true,
            description: 'Authorization header value, e.g. `Bearer ...`.',
          },
          origins: originsSchema,
        },
        // Headers go to listed origins only: an installation with headers names them.
        dependencies: { authorization: ['origins'], defaultHeaders: ['origins'] },
      },
      secretFields: ['authorization'],
      secretDestinationFields: ['origins'],
      agentKinds: [httpAgentManifest],
      actions: [httpRequestManifest],
    },
    agentKinds: { agent: httpAgent(client) },
    actions: { request: httpRequest(client) },
  };
}
