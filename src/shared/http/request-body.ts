import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { json, raw, urlencoded } from 'express';
import { DomainError } from '../errors/domain-error';

/** Deeper bodies are refused before validation walks them recursively. */
export const MAX_JSON_DEPTH = 32;

/** POST /api/agents/:id/execute and POST /api/workflows/:id/run: `{ input }` bodies, read up to the input limit. */
const INPUT_ROUTES = [/^\/api\/agents\/[^/]+\/execute$/, /^\/api\/workflows\/[^/]+\/run$/];
const isInputRoute = (req: Request) => req.method === 'POST' && INPUT_ROUTES.some((route) => route.test(req.path));

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echoes a sane client `X-Request-Id`, or makes one; every log line and response carries it. */
export function requestId(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    (req as Request & { id: string }).id = id;
    res.setHeader('X-Request-Id', id);
    next();
  };
}

function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function isJson(req: Request): boolean {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  return type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type);
}

/** The IdP's form posts (HTTP-POST binding): responses to the ACS, logout messages to the SLO endpoint. */
const SAML_FORM = /^\/api\/auth\/saml\/[^/]+\/(acs|slo)$/;
/**
 * Inbound webhook triggers: signatures are over the exact bytes, and senders send what they
 * send; the route reads the body itself (`rawBodyReader`), once its limits let the sender in.
 */
const HOOK = /^\/api\/hooks\/[^/]+$/;
const isHook = (req: Request) => req.method === 'POST' && HOOK.test(req.path);

/** Reads a body's bytes (empty without one): over `limitBytes` the parser's 413, like every other body. */
export function rawBodyReader(limitBytes: number): (req: Request, res: Response) => Promise<Buffer> {
  const bytes = raw({ limit: limitBytes, type: () => true });
  return (req, res) =>
    new Promise((resolve, reject) =>
      bytes(req, res, (error?: unknown) => (error ? reject(error) : resolve(Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0)))),
    );
}

/**
 * JSON only (but the SAML ACS and SLO routes' form posts; inbound webhook triggers read theirs
 * themselves): a body of another type is 415, over `limitBytes` 413 (over `inputLimitBytes` on
 * the routes that take an input), malformed 400 (the parser's errors are mapped by the
 * exception filter), nested deeper than MAX_JSON_DEPTH 400.
 */
export function jsonBody(limitBytes: number, inputLimitBytes = limitBytes): RequestHandler[] {
  const parseBody = json({ limit: limitBytes, type: () => true, strict: false });
  const parseInput = json({ limit: inputLimitBytes, type: () => true, strict: false });
  const parse: RequestHandler = (req, res, next) => (isInputRoute(req) ? parseInput : parseBody)(req, res, next);
  const form = urlencoded({ limit: limitBytes, extended: false, parameterLimit: 10 });
  const handlers: RequestHandler[] = [
    // The only form posts: an identity provider's SAML messages (HTTP-POST binding).
    (req, res, next) =>
      req.method === 'POST' && SAML_FORM.test(req.path) && req.is('application/x-www-form-urlencoded') ? form(req, res, next) : next(),
    (req, _res, next) => {
      if (req.body !== undefined) return next();
      if (hasBody(req) && !isJson(req)) {
        return next(new DomainError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be JSON (Content-Type: application/json)'));
      }
      next();
    },
    (req, res, next) => (hasBody(req) && req.body === undefined ? parse(req, res, next) : next()),
    (req, _res, next) => {
      if (req.body !== undefined && depthExceeds(req.body, MAX_JSON_DEPTH)) {
        return next(
          new DomainError('VALIDATION_FAILED', `The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`, [
            { path: '', message: `nesting deeper than ${MAX_JSON_DEPTH}` },
          ]),
        );
      }
      const found = req.body !== undefined ? unstorableTextAt(req.body) : null;
      next(found ? unstorableText(found, 'The JSON body', 'the body') : undefined);
    },
  ];
  return handlers.map((handler) => (req, res, next) => (isHook(req) ? next() : handler(req, res, next)));
}

/**
 * Every request's query string, hooks' too (a trigger stores its query as JSONB): a NUL
 * character in a key or value is 400, naming the parameter, before any route sees it.
 */
export function storableQuery(): RequestHandler {
  return (req, _res, next) => {
    const found = unstorableTextAt(req.query);
    next(found ? unstorableText(found, 'The query string', 'the query') : undefined);
  };
}

/** What Postgres cannot store as text or in JSONB, and where a JSON value holds it. */
export interface UnstorableTextFound {
  /** The dotted path of the string; of a key: the path of its object, "(a key)" at the top. */
  path: string;
  problem: 'NUL' | 'lone surrogate';
}

/** A surrogate half without its other half: not Unicode text, so not UTF-8 either. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function problemOf(text: string): UnstorableTextFound['problem'] | null {
  if (text.includes('\u0000')) return 'NUL';
  return LONE_SURROGATE.test(text) ? 'lone surrogate' : null;
}

/**
 * The first string or key Postgres refuses, or null: a NUL character (text and JSONB refuse
 * it) or a lone surrogate (`"\ud800"` in JSON text parses to one; JSONB refuses its escape,
 * 22P05). Such a value would otherwise reach the database and end as an error there.
 * Iterative, so a hostile body cannot overflow the stack.
 */
export function unstorableTextAt(value: unknown): UnstorableTextFound | null {
  const stack: Array<[unknown, string]> = [[value, '']];
  while (stack.length) {
    const [node, path] = stack.pop()!;
    if (typeof node === 'string') {
      const problem = problemOf(node);
      if (problem) return { path, problem };
    } else if (node !== null && typeof node === 'object') {
      for (const [key, child] of Object.entries(node)) {
        const problem = problemOf(key);
        if (problem) return { path: path || '(a key)', problem };
        stack.push([child, path ? `${path}.${key}` : key]);
      }
    }
  }
  return null;
}

/**
 * 400 VALIDATION_FAILED for what `unstorableTextAt` found; `what` starts the message ("The
 * body"), `whole` names the value when the path is empty ("the body").
 */
export function unstorableText(found: UnstorableTextFound, what: string, whole = 'the value'): DomainError {
  const field = found.path || whole;
  const [holds, mustNot] =
    found.problem === 'NUL'
      ? ['a NUL character (\\u0000), which no field accepts', 'a NUL character']
      : ['a lone surrogate (half of a UTF-16 pair, like \\ud800), which is not Unicode text', 'a lone surrogate'];
  return new DomainError('VALIDATION_FAILED', `${what} holds ${holds}`, [
    { path: found.path, message: `${field} must not contain ${mustNot}` },
  ]);
}

/** Throws `unstorableText(...)` for the first string or key of `value` that Postgres cannot store. */
export function assertStorableText(value: unknown, what: string, whole?: string): void {
  const found = unstorableTextAt(value);
  if (found) throw unstorableText(found, what, whole);
}

/** Iterative, so a hostile body cannot overflow the stack here either. */
export function depthExceeds(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}
