import express, { NextFunction, Request, Response } from 'express';
import request from 'supertest';
import { DomainError } from '../errors/domain-error';
import { assertStorableText, depthExceeds, jsonBody, unstorableTextAt } from './request-body';

describe('jsonBody', () => {
  // A body limit of 100 bytes, 200 for the routes that take an input; the parser's 413 names the limit.
  const app = express();
  for (const handler of jsonBody(100, 200)) app.use(handler);
  app.use((req: Request, res: Response) => res.json({ read: JSON.stringify(req.body).length }));
  app.use((error: { status: number; limit?: number }, _req: Request, res: Response, _next: NextFunction) =>
    res.status(error.status).json({ limit: error.limit }),
  );
  const send = (method: 'post' | 'put', path: string, chars: number) => {
    const test = method === 'post' ? request(app).post(path) : request(app).put(path);
    return test.send({ input: 'x'.repeat(chars) });
  };

  it('reads the body of agent execute and workflow run up to the input limit', async () => {
    for (const path of ['/api/agents/a1/execute', '/api/workflows/w1/run']) {
      expect((await send('post', path, 150)).status).toBe(200);
      expect(await send('post', path, 250)).toMatchObject({ status: 413, body: { limit: 200 } });
    }
  });

  it('reads every other body up to the body limit', async () => {
    for (const path of ['/api/workflows', '/api/agents/a1/execute/x', '/api/workflows/w1/runs', '/api/agents/a1']) {
      expect(await send('post', path, 150)).toMatchObject({ status: 413, body: { limit: 100 } });
    }
    expect(await send('put', '/api/agents/a1/execute', 150)).toMatchObject({ status: 413, body: { limit: 100 } });
  });
});

describe('depthExceeds', () => {
  it('measures objects and arrays alike', () => {
    expect(depthExceeds({ a: { b: [1] } }, 3)).toBe(false);
    expect(depthExceeds({ a: { b: [{}] } }, 3)).toBe(true);
    expect(depthExceeds('scalar', 1)).toBe(false);
  });

  it('walks 100,000 levels without overflowing the stack', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(depthExceeds(deep, 32)).toBe(true);
  });
});

describe('unstorableTextAt', () => {
  it('finds a NUL or a lone surrogate in a string, by its dotted path', () => {
    expect(unstorableTextAt({ a: { b: ['ok', 'x\u0000'] } })).toEqual({ path: 'a.b.1', problem: 'NUL' });
    expect(unstorableTextAt({ a: 'x\ud800y' })).toEqual({ path: 'a', problem: 'lone surrogate' });
    expect(unstorableTextAt({ a: '\udfff' })).toEqual({ path: 'a', problem: 'lone surrogate' });
    expect(unstorableTextAt({ a: '\ud83d' })).toEqual({ path: 'a', problem: 'lone surrogate' });
    expect(unstorableTextAt('\udc00\ud800')).toEqual({ path: '', problem: 'lone surrogate' });
  });

  it('names the object of a key that holds one, "(a key)" at the top', () => {
    expect(unstorableTextAt({ a: { 'k\ud800': 1 } })).toEqual({ path: 'a', problem: 'lone surrogate' });
    expect(unstorableTextAt({ 'k\u0000': 1 })).toEqual({ path: '(a key)', problem: 'NUL' });
  });

  it('passes well-formed pairs and everything else', () => {
    expect(unstorableTextAt({ emoji: '\ud83d\ude00', text: 'ünïcødé \ufffd', n: 1, none: null, list: [true] })).toBeNull();
  });

  it('walks 100,000 levels without overflowing the stack', () => {
    let deep: unknown = '\ud800';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(unstorableTextAt(deep)?.problem).toBe('lone surrogate');
  });
});

describe('assertStorableText', () => {
  it('throws 400 VALIDATION_FAILED naming the field and what is wrong', () => {
    const refusal = (() => {
      try {
        assertStorableText({ input: { text: 'a\ud800' } }, 'The body', 'the body');
      } catch (error) {
        return error as DomainError;
      }
    })();
    expect(refusal).toBeInstanceOf(DomainError);
    expect({ code: refusal?.code, message: refusal?.message, details: refusal?.details }).toEqual({
      code: 'VALIDATION_FAILED',
      message: expect.stringMatching(/^The body holds a lone surrogate/),
      details: [{ path: 'input.text', message: 'input.text must not contain a lone surrogate' }],
    });
    expect(() => assertStorableText('\u0000', 'The body', 'the body')).toThrow(/NUL character/);
    expect(() => assertStorableText({ fine: '\ud83d\ude00' }, 'The body')).not.toThrow();
  });
});
