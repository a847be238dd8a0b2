import createClient, { type Client } from 'openapi-fetch';
import type { components, operations, paths } from './schema';

export type { components, operations, paths };

/** The typed client: `client.GET('/api/agents/{id}', { params: { path: { id } } })`, and so on for every route. */
export type PlatformClient = Client<paths>;
export type Schemas = components['schemas'];
/** The one error shape of every error answer: `{ error: { code, message, status, details? } }`. */
export type ErrorEnvelope = Schemas['ErrorEnvelopeDto'];

export interface PlatformClientOptions {
  /** Where the service answers, e.g. `http://127.0.0.1:3000` (the paths start with `/api`). */
  baseUrl: string;
  /** An access token or API key sent as `Authorization: Bearer`; a function is asked on every request (a refreshed token). */
  token?: string | (() => string | undefined);
  /** Another fetch (a proxy, a test double); default the global one. */
  fetch?: (request: Request) => Promise<Response>;
}

/** A client of the Platform's API, typed from its OpenAPI document (openapi.json). */
export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const client = createClient<paths>({ baseUrl: options.baseUrl.replace(/\/+$/, ''), fetch: options.fetch });
  const { token } = options;
  if (token !== undefined) {
    client.use({
      onRequest({ request }) {
        const value = typeof token === 'function' ? token() : token;
        if (value) request.headers.set('Authorization', `Bearer ${value}`);
        return request;
      },
    });
  }
  return client;
}

/** An error answer of the API, as its envelope says it. */
export class PlatformError extends Error {
  readonly code: string;
  readonly status: number;
  readonly details: ErrorEnvelope['error']['details'];

  constructor(envelope: ErrorEnvelope, response: Response) {
    super(`${response.status} ${envelope.error.code}: ${envelope.error.message}`);
    this.name = 'PlatformError';
    this.code = envelope.error.code;
    this.status = response.status;
    this.details = envelope.error.details;
  }
}

/**
 * The data of a successful answer, or a PlatformError for an error answer:
 * `const agent = unwrap(await client.GET('/api/agents/{id}', ...))`.
 */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || !result.response.ok) {
    const envelope = result.error as ErrorEnvelope | undefined;
    if (envelope?.error?.code) throw new PlatformError(envelope, result.response);
    throw new Error(`${result.response.status} ${result.response.statusText}`);
  }
  return result.data as T;
}

/** Signs in with a password and answers a client that sends the access token, and the token pair. */
export async function signIn(
  options: Omit<PlatformClientOptions, 'token'> & { email: string; password: string },
): Promise<{ client: PlatformClient; tokens: Schemas['TokenPairResponse'] }> {
  const anonymous = createPlatformClient(options);
  const tokens = unwrap(await anonymous.POST('/api/auth/login', { body: { email: options.email, password: options.password } }));
  return { client: createPlatformClient({ ...options, token: tokens.accessToken }), tokens };
}

/**
 * Every item of a paginated list, page after page: `fetchPage` gets the cursor to send (none
 * for the first page) and answers `{ data, nextCursor }`; the pages end at `nextCursor: null`.
 *
 *   for await (const run of pages((cursor) => client.GET('/api/workflows/{id}/runs', { params: { path: { id }, query: { cursor } } }).then(unwrap)))
 */
export async function* pages<T>(
  fetchPage: (cursor: string | undefined) => Promise<{ data: T[]; nextCursor: string | null }>,
): AsyncGenerator<T> {
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    yield* page.data;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}
