import fc from 'fast-check';
import { ERROR_CATALOG } from '../../src/shared/errors/error-catalog';

/**
 * Property-based fuzzing of the API from its committed OpenAPI document: every operation gets
 * requests that are well-formed and requests that are broken on purpose (wrong types, missing
 * fields, NUL and other hostile characters, huge numbers, deep nesting, wrong content types,
 * malformed JSON, bad tokens, forged cursors). The property: no answer is a 5xx, and every
 * error is the envelope `{ error: { code, message, status } }` with a code of the catalog and
 * the HTTP status. Used by `npm run fuzz` (a long run against a started service) and by a short
 * run in the test suite.
 */

export interface FuzzRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  /** Already encoded; undefined: no body. */
  body?: string;
}

export interface FuzzResponse {
  status: number;
  contentType: string;
  text: string;
}

export interface FuzzContext {
  /** Tokens of an admin and an operator; the fuzzer also sends none and forged ones. */
  tokens: { admin: string; operator: string };
  /** Ids and slugs that exist, so some requests reach past the 404. */
  known: { ids: string[]; orgSlugs: string[] };
  send: (request: FuzzRequest) => Promise<FuzzResponse>;
}

export interface FuzzFigures {
  requests: number;
  byStatus: Record<string, number>;
  elapsedMs: number;
}

interface Operation {
  method: string;
  path: string;
  bodyFields: string[];
}

type OpenApi = {
  paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: { $ref?: string } }> } }>>;
  components?: { schemas?: Record<string, { properties?: Record<string, unknown> }> };
};

/** Operations that would end the fuzzer's own session: sent with forged tokens only. */
const SESSION_ENDING = new Set(['post /api/auth/logout', 'patch /api/auth/me/password']);

export function operationsOf(document: OpenApi): Operation[] {
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const ref = operation.requestBody?.content?.['application/json']?.schema?.$ref;
      const schema = ref ? document.components?.schemas?.[ref.split('/').pop()!] : undefined;
      operations.push({ method: method.toUpperCase(), path, bodyFields: Object.keys(schema?.properties ?? {}) });
    }
  }
  return operations;
}

const HOSTILE_STRINGS = [
  '\u0000',
  'a\u0000b',
  '\ud800',
  '',
  ' ',
  'x'.repeat(70_000),
  '../../etc/passwd',
  '<script>alert(1)</script>',
  "'; DROP TABLE users; --",
  '${jndi:ldap://x}',
  '😀'.repeat(50),
  '%00',
  '{{input}}',
  '$sort([1..30000])',
  'https://169.254.169.254/latest/meta-data',
];

const hostileString = fc.oneof(fc.constantFrom(...HOSTILE_STRINGS), fc.string({ maxLength: 40 }), fc.uuid());
/**
 * For paths and query strings: Node's HTTP parser itself refuses a request line over 16 KiB
 * (431, connection closed) before the service sees it, so long values go in bodies only.
 */
const hostileUrlValue = fc.oneof(
  fc.constantFrom(...HOSTILE_STRINGS.filter((s) => s.length < 1000)),
  fc.string({ maxLength: 40 }),
  fc.uuid(),
);
const hostileNumber = fc.constantFrom(0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 1, Number.MAX_SAFE_INTEGER, 1e-300);
const nested = (depth: number): unknown => (depth === 0 ? 1 : [nested(depth - 1)]);
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  hostileNumber,
  fc.boolean(),
  fc.constant(null),
  fc.constant(nested(40)),
  fc.jsonValue({ maxDepth: 3 }),
  fc.dictionary(hostileString, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);

function bodyFor(operation: Operation): fc.Arbitrary<{ body?: string; contentType?: string }> {
  const fields = operation.bodyFields.length ? operation.bodyFields : ['name', 'config', 'input'];
  const record = fc
    .subarray(fields)
    .chain((chosen) => fc.tuple(...chosen.map((field) => hostileValue.map((value) => [field, value] as const))))
    .map((entries) => Object.fromEntries(entries));
  const json = (value: fc.Arbitrary<unknown>) => value.map((v) => ({ body: JSON.stringify(v), contentType: 'application/json' }));
  return fc.oneof(
    { weight: 5, arbitrary: json(record) },
    { weight: 1, arbitrary: json(hostileValue) },
    { weight: 1, arbitrary: fc.constant({}) },
    {
      weight: 1,
      arbitrary: fc.constantFrom('{"a":', '[', 'null', '"x"', '{"a":1}}').map((body) => ({ body, contentType: 'application/json' })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'multipart/form-data'), hostileString)
        .map(([contentType, body]) => ({ body: body || 'x=1', contentType })),
    },
  );
}

function pathFor(operation: Operation, known: FuzzContext['known']): fc.Arbitrary<string> {
  const params = [...operation.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
  const value = (name: string): fc.Arbitrary<string> => {
    if (name === 'slug') return fc.constantFrom('transform', 'http', 'llm', 'nope', 'a'.repeat(300), 'TRANSFORM');
    if (name === 'org') return fc.oneof(fc.constantFrom(...known.orgSlugs, 'nope'), hostileUrlValue);
    return fc.oneof(
      fc.constantFrom(...known.ids),
      fc.uuid(),
      fc.constantFrom('not-a-uuid', '-'.repeat(36), '00000000-0000-0000-0000-000000000000'),
      hostileUrlValue,
    );
  };
  return fc
    .tuple(...params.map(value))
    .map((values) => params.reduce((path, name, i) => path.replace(`{${name}}`, encodePathValue(values[i])), operation.path));
}

/** A path segment; a lone surrogate has no UTF-8 form, so it goes as the bytes of one (invalid UTF-8). */
function encodePathValue(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return '%ED%A0%80';
  }
}

const forgedCursor = fc.oneof(
  fc.constantFrom('!!!', '', 'e30', Buffer.from('[0,"x"]').toString('base64url')),
  fc
    .tuple(fc.oneof(hostileUrlValue, hostileNumber), fc.oneof(hostileUrlValue, hostileNumber))
    .map((pair) => Buffer.from(JSON.stringify(pair)).toString('base64url')),
);

const query = fc.record(
  {
    limit: fc.constantFrom('0', '-1', '101', 'abc', '1e309', '20', '1'),
    cursor: forgedCursor,
    wait: fc.constantFrom('-1', '999', 'x', '0', '1'),
    status: fc.constantFrom('x', 'succeeded', 'failed'),
    since: fc.constantFrom('yesterday', '2026-01-01T00:00:00Z', '99999-01-01'),
    redirect: fc.constantFrom('https://evil.example', '/x', 'javascript:alert(1)'),
  },
  { requiredKeys: [] },
);

function authFor(operation: Operation, tokens: FuzzContext['tokens']): fc.Arbitrary<string | undefined> {
  const forged = fc.constantFrom(
    undefined,
    'Bearer garbage',
    'Basic YWRtaW46YWRtaW4=',
    'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.',
    `Bearer ${tokens.admin}x`,
    'Bearer ',
  );
  if (SESSION_ENDING.has(`${operation.method.toLowerCase()} ${operation.path}`)) return forged;
  return fc.oneof(
    { weight: 6, arbitrary: fc.constant(`Bearer ${tokens.admin}`) },
    { weight: 2, arbitrary: fc.constant(`Bearer ${tokens.operator}`) },
    { weight: 2, arbitrary: forged },
  );
}

export function requestArbitrary(operations: Operation[], context: FuzzContext): fc.Arbitrary<FuzzRequest> {
  return fc.constantFrom(...operations).chain((operation) =>
    fc
      .tuple(pathFor(operation, context.known), query, authFor(operation, context.tokens), bodyFor(operation))
      .map(([path, q, authorization, { body, contentType }]) => {
        const headers: Record<string, string> = {};
        if (authorization !== undefined) headers.authorization = authorization;
        if (contentType) headers['content-type'] = contentType;
        const withBody = operation.method !== 'GET' && operation.method !== 'DELETE';
        return { method: operation.method, path, query: q, headers, body: withBody ? body : undefined };
      }),
  );
}

/** Why a response breaks the property, or null. */
export function problemOf(response: FuzzResponse): string | null {
  if (response.status >= 500) return `answered ${response.status}: ${response.text.slice(0, 300)}`;
  if (response.status < 400) return null;
  let body: { error?: { code?: unknown; message?: unknown; status?: unknown } };
  try {
    body = JSON.parse(response.text) as typeof body;
  } catch {
    return `answered ${response.status} without a JSON body: ${response.text.slice(0, 200)}`;
  }
  const error = body.error;
  if (!error || typeof error.code !== 'string' || typeof error.message !== 'string' || error.status !== response.status) {
    return `answered ${response.status} outside the envelope: ${response.text.slice(0, 300)}`;
  }
  if (!(error.code in ERROR_CATALOG)) return `answered an error code not in the catalog: ${error.code}`;
  return null;
}

/** Runs `numRuns` requests (fast-check shrinks a failing one to its simplest form and throws it). */
export async function fuzz(document: OpenApi, context: FuzzContext, options: { seed: number; numRuns: number }): Promise<FuzzFigures> {
  const figures: FuzzFigures = { requests: 0, byStatus: {}, elapsedMs: 0 };
  const started = Date.now();
  await fc.assert(
    fc.asyncProperty(requestArbitrary(operationsOf(document), context), async (request) => {
      const response = await context.send(request);
      figures.requests++;
      figures.byStatus[response.status] = (figures.byStatus[response.status] ?? 0) + 1;
      const problem = problemOf(response);
      if (problem) throw new Error(`${request.method} ${request.path} ${JSON.stringify(request.query)}: ${problem}`);
    }),
    { seed: options.seed, numRuns: options.numRuns, endOnFailure: false },
  );
  figures.elapsedMs = Date.now() - started;
  return figures;
}
