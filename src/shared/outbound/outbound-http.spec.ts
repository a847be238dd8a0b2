import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { parseAllowList } from './address-policy';
import { OutboundHttp } from './outbound-http';
import { type OutboundErrorCode, type OutboundRequest, type Resolver } from './outbound-http.types';

/** A loopback server whose routes record what reached them. */
class LoopbackServer {
  readonly hits: string[] = [];
  streamClosed = false;
  /** Settles when the response of the latest `/endless` closes, once `streamClosed` is true. */
  private streamClosing: Promise<void> = Promise.resolve();
  /** Ends the response of `/drip`, which waits for it after its first chunk. */
  endDrip: (() => void) | undefined;
  private readonly server: Server = createServer((req, res) => this.route(req, res));

  get port() {
    return (this.server.address() as AddressInfo).port;
  }

  async start() {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  /**
   * Waits until the response of the latest `/endless` has closed, or `timeoutMs` has passed
   * (then `streamClosed` is still false, for the caller to assert).
   */
  async streamClose(timeoutMs = 5000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.streamClosing, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }

  async stop() {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private route(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url!, 'http://loopback');
    this.hits.push(url.pathname);
    const redirect = (status: number, to: string) => res.writeHead(status, { location: to }).end('moved');
    switch (url.pathname) {
      case '/echo': {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          const echo = { method: req.method, headers: req.headers, body: Buffer.concat(chunks).toString() };
          res.writeHead(200, { 'Content-Type': 'application/json', 'X-Echo': 'yes' }).end(JSON.stringify(echo));
        });
        return;
      }
      case '/redirect':
        return redirect(Number(url.searchParams.get('status') ?? 302), url.searchParams.get('to')!);
      case '/loop':
        return redirect(302, '/loop');
      case '/slow-loop':
        return void setTimeout(() => redirect(302, '/slow-loop'), 150);
      case '/sized':
        return res.writeHead(200, { 'Content-Length': 10_000 }).end(Buffer.alloc(10_000));
      case '/endless': {
        let closed = () => {};
        this.streamClosing = new Promise<void>((resolve) => (closed = resolve));
        res.writeHead(200);
        const timer = setInterval(() => res.write(Buffer.alloc(16 * 1024)), 5);
        res.on('close', () => {
          clearInterval(timer);
          this.streamClosed = true;
          closed();
        });
        return;
      }
      case '/drip':
        res.writeHead(200).write('first ');
        this.endDrip = () => {
          this.endDrip = undefined;
          res.end('second');
        };
        return;
      case '/hang':
        return;
      default:
        res.writeHead(404).end();
    }
  }
}

/** A resolver that answers from a script, one answer per call, repeating the last. */
function scriptedResolver(...answers: string[][]): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolver = async (hostname: string) => {
    calls.push(hostname);
    const answer = answers[Math.min(calls.length, answers.length) - 1];
    return answer.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));
  };
  return Object.assign(resolver, { calls });
}

function expectCode(promise: Promise<unknown>, code: OutboundErrorCode) {
  return expect(promise).rejects.toMatchObject({ name: 'OutboundError', code });
}

describe('OutboundHttp', () => {
  const server = new LoopbackServer();
  let origin: string;
  const get = (url: string, more: Partial<OutboundRequest> = {}): OutboundRequest => ({ method: 'GET', url, timeoutMs: 2000, ...more });
  const client = (allowList: string, resolver?: Resolver) => new OutboundHttp({ allowList: parseAllowList(allowList), resolver });

  beforeAll(() => server.start());
  afterAll(() => server.stop());
  beforeEach(() => {
    server.hits.length = 0;
    origin = `http://127.0.0.1:${server.port}`;
  });

  describe('with loopback allow-listed', () => {
    const http = client('127.0.0.1/32');

    it('GETs and returns status, lowercased headers, body and URL', async () => {
      const response = await http.request(get(`${origin}/echo?q=1`));
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toBe('application/json');
      expect(response.headers['x-echo']).toBe('yes');
      expect(JSON.parse(response.body.toString())).toMatchObject({ method: 'GET', body: '' });
      expect(response.url).toBe(`${origin}/echo?q=1`);
    });

    it('POSTs a JSON body', async () => {
      const body = JSON.stringify({ hello: 'world' });
      const response = await http.request(get(`${origin}/echo`, { method: 'POST', body, headers: { 'Content-Type': 'application/json' } }));
      const echo = JSON.parse(response.body.toString());
      expect(echo).toMatchObject({ method: 'POST', body, headers: { 'content-type': 'application/json' } });
    });

    it('hands each body chunk to onBody as it arrives, before the response ends', async () => {
      const seen: string[] = [];
      const onBody = (chunk: Buffer) => {
        seen.push(chunk.toString());
        server.endDrip?.();
      };
      const response = await http.request(get(`${origin}/drip`, { onBody }));
      expect(seen).toEqual(['first ', 'second']);
      expect(response.body.toString()).toBe('first second');
    });

    it('hands the status and headers to onHead before the first body chunk', async () => {
      const seen: string[] = [];
      const onHead = (status: number, headers: Record<string, string>) => seen.push(`head ${status} ${headers['content-type'] ?? ''}`);
      const onBody = (chunk: Buffer) => {
        seen.push(chunk.toString());
        server.endDrip?.();
      };
      await http.request(get(`${origin}/drip`, { onHead, onBody }));
      expect(seen).toEqual([expect.stringMatching(/^head 200/), 'first ', 'second']);
    });

    it('stops reading and fails with the error onBody throws', async () => {
      server.streamClosed = false;
      const stop = new Error('enough');
      const onBody = () => {
        throw stop;
      };
      await expect(http.request(get(`${origin}/endless`, { onBody }))).rejects.toBe(stop);
      await server.streamClose();
      expect(server.streamClosed).toBe(true);
    });

    it('reports a refused connection as CONNECT_FAILED without leaking request headers', async () => {
      const closed = new LoopbackServer();
      await closed.start();
      const port = closed.port;
      await closed.stop();
      const failure = http.request(get(`http://127.0.0.1:${port}/`, { headers: { 'X-Api-Key': 'sekret' } }));
      await expectCode(failure, 'CONNECT_FAILED');
      await expect(failure).rejects.toThrow(/^(?!.*sekret)/);
    });
  });

  describe('refusing internal addresses', () => {
    const http = client('');

    it('refuses loopback when it is not allow-listed, before connecting', async () => {
      await expectCode(http.request(get(`${origin}/echo`)), 'ADDRESS_NOT_ALLOWED');
      expect(server.hits).toEqual([]);
    });

    it.each([
      ['decimal', 'http://2130706433:PORT/echo'],
      ['hex', 'http://0x7f000001:PORT/echo'],
      ['octal', 'http://0177.0.0.1:PORT/echo'],
      ['short', 'http://127.1:PORT/echo'],
      ['IPv4-mapped IPv6', 'http://[::ffff:127.0.0.1]:PORT/echo'],
      ['IPv4-mapped IPv6, hex form', 'http://[::ffff:7f00:1]:PORT/echo'],
      ['IPv6 loopback', 'http://[::1]:PORT/echo'],
      ['unspecified', 'http://0.0.0.0:PORT/echo'],
    ])('refuses loopback spelled %s', async (_spelling, url) => {
      await expectCode(http.request(get(url.replace('PORT', String(server.port)))), 'ADDRESS_NOT_ALLOWED');
      expect(server.hits).toEqual([]);
    });

    it.each([
      ['http://169.254.169.254/latest/meta-data/'],
      ['http://10.0.0.1/'],
      ['http://172.16.0.1/'],
      ['http://192.168.0.1/'],
      ['http://100.64.0.1/'],
      ['http://[fd00::1]/'],
      ['http://[64:ff9b::a9fe:a9fe]/'],
    ])('refuses %s', async (url) => {
      await expectCode(http.request(get(url)), 'ADDRESS_NOT_ALLOWED');
    });

    it('names the address but not the query or the headers', async () => {
      const failure = http.request(get('http://169.254.169.254/?token=sekret', { headers: { Authorization: 'Bearer sekret' } }));
      await expect(failure).rejects.toThrow('169.254.169.254');
      await expect(failure).rejects.toThrow(/^(?!.*sekret)/);
    });

    it.each([['ftp://example.com/'], ['file:///etc/passwd'], ['gopher://127.0.0.1:70/'], ['data:text/plain,hi']])(
      'refuses the scheme of %s',
      async (url) => {
        await expectCode(http.request(get(url)), 'SCHEME_NOT_ALLOWED');
      },
    );

    it.each([['not a url'], ['http://'], ['http://user:pass@example.com/'], ['https://token@example.com/']])(
      'refuses %p as URL_INVALID',
      async (url) => {
        await expectCode(http.request(get(url)), 'URL_INVALID');
      },
    );
  });

  describe('host names', () => {
    it('refuses a name that resolves to loopback', async () => {
      const resolver = scriptedResolver(['127.0.0.1']);
      await expectCode(client('', resolver).request(get(`http://evil.test:${server.port}/echo`)), 'ADDRESS_NOT_ALLOWED');
      expect(server.hits).toEqual([]);
    });

    it('refuses a name when any of its addresses is internal', async () => {
      const resolver = scriptedResolver(['93.184.216.34', '10.0.0.7']);
      await expectCode(client('', resolver).request(get('http://mixed.test/')), 'ADDRESS_NOT_ALLOWED');
    });

    it('reports a failed lookup as DNS_FAILED', async () => {
      const resolver: Resolver = () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }));
      await expectCode(client('', resolver).request(get('http://nowhere.test/')), 'DNS_FAILED');
      await expectCode(client('', scriptedResolver([])).request(get('http://empty.test/')), 'DNS_FAILED');
    });

    it('connects to the address it checked and sends the name as Host', async () => {
      const resolver = scriptedResolver(['127.0.0.1'], ['10.255.255.1']);
      const response = await client('safe.test', resolver).request(get(`http://safe.test:${server.port}/echo`));
      expect(JSON.parse(response.body.toString()).headers.host).toBe(`safe.test:${server.port}`);
      expect(resolver.calls).toEqual(['safe.test']);
    });

    it('sends the name, not the address, as TLS SNI over https', async () => {
      const names: string[] = [];
      const tls = createTlsServer({ SNICallback: (name, callback) => (names.push(name), callback(new Error('no certificate here'))) });
      tls.on('tlsClientError', () => undefined);
      await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
      const port = (tls.address() as AddressInfo).port;
      const failure = client('safe.test', scriptedResolver(['127.0.0.1'])).request(get(`https://safe.test:${port}/`));
      await expectCode(failure, 'CONNECT_FAILED');
      await new Promise((resolve) => tls.close(resolve));
      expect(names).toEqual(['safe.test']);
    });

    // safe.test cannot be resolved by the system, so the test above succeeding shows the socket
    // used the resolver's checked answer; this one shows a later, different answer is never asked for.
    it('defeats DNS rebinding: a second answer pointing at loopback is never used', async () => {
      const resolver = scriptedResolver(['192.0.2.1'], ['127.0.0.1']);
      const failure = client('', resolver).request(get(`http://rebind.test:${server.port}/echo`, { timeoutMs: 300 }));
      await expect(failure).rejects.toMatchObject({ code: expect.stringMatching(/^(CONNECT_FAILED|TIMEOUT)$/) });
      expect(resolver.calls).toEqual(['rebind.test']);
      expect(server.hits).toEqual([]);
    });
  });

  describe('redirects', () => {
    const resolver = scriptedResolver(['127.0.0.1']);
    const http = client('safe.test', resolver);
    const safe = () => `http://safe.test:${server.port}`;
    const via = (to: string, status = 302) => `${safe()}/redirect?status=${status}&to=${encodeURIComponent(to)}`;

    it('follows a redirect and reports the final URL', async () => {
      const response = await http.request(get(via('/echo')));
      expect(response.status).toBe(200);
      expect(response.url).toBe(`${safe()}/echo`);
    });

    it.each([
      ['loopback by IP', 'http://127.0.0.1:PORT/echo'],
      ['IPv4-mapped hex form', 'http://[::ffff:7f00:1]:PORT/echo'],
      ['the metadata address', 'http://169.254.169.254/latest/meta-data/'],
    ])('re-checks the target: refuses a redirect to %s', async (_what, to) => {
      await expectCode(http.request(get(via(to.replace('PORT', String(server.port))))), 'ADDRESS_NOT_ALLOWED');
      expect(server.hits).toEqual(['/redirect']);
    });

    it('refuses a redirect to another scheme', async () => {
      await expectCode(http.request(get(via('file:///etc/passwd'))), 'SCHEME_NOT_ALLOWED');
    });

    it('turns a POST into a GET without body on 303, and keeps it on 307', async () => {
      const post = (status: number) =>
        http.request(get(via('/echo', status), { method: 'POST', body: 'payload', headers: { 'Content-Type': 'text/plain' } }));
      expect(JSON.parse((await post(303)).body.toString())).toMatchObject({ method: 'GET', body: '' });
      expect(JSON.parse((await post(302)).body.toString())).toMatchObject({ method: 'GET', body: '' });
      expect(JSON.parse((await post(307)).body.toString())).toMatchObject({ method: 'POST', body: 'payload' });
    });

    it('drops credentials when the redirect leaves the origin', async () => {
      const both = client('safe.test,127.0.0.1/32', resolver);
      const headers = { Authorization: 'Bearer sekret', 'X-Api-Key': 'sekret', Accept: 'application/json' };
      const response = await both.request(get(via(`http://127.0.0.1:${server.port}/echo`), { headers }));
      const echoed = JSON.parse(response.body.toString()).headers;
      expect(echoed).toMatchObject({ accept: 'application/json' });
      expect(echoed).not.toHaveProperty('authorization');
      expect(echoed).not.toHaveProperty('x-api-key');
    });

    it('fails with TOO_MANY_REDIRECTS past maxRedirects', async () => {
      await expectCode(http.request(get(`${safe()}/loop`, { maxRedirects: 2 })), 'TOO_MANY_REDIRECTS');
      expect(server.hits).toEqual(['/loop', '/loop', '/loop']);
    });

    it('returns the 3xx as is when maxRedirects is 0', async () => {
      const response = await http.request(get(`${safe()}/loop`, { maxRedirects: 0 }));
      expect(response.status).toBe(302);
      expect(response.headers.location).toBe('/loop');
      expect(response.body.toString()).toBe('moved');
    });
  });

  describe('limits', () => {
    const http = client('127.0.0.1/32');

    it('stops reading past maxResponseBytes and closes the connection', async () => {
      server.streamClosed = false;
      await expectCode(http.request(get(`${origin}/endless`, { maxResponseBytes: 1024 })), 'RESPONSE_TOO_LARGE');
      await server.streamClose();
      expect(server.streamClosed).toBe(true);
    });

    it('refuses a declared Content-Length over the cap', async () => {
      await expectCode(http.request(get(`${origin}/sized`, { maxResponseBytes: 9_999 })), 'RESPONSE_TOO_LARGE');
      expect((await http.request(get(`${origin}/sized`, { maxResponseBytes: 10_000 }))).body).toHaveLength(10_000);
    });

    it('times out a server that never answers', async () => {
      const started = Date.now();
      await expectCode(http.request(get(`${origin}/hang`, { timeoutMs: 200 })), 'TIMEOUT');
      expect(Date.now() - started).toBeLessThan(1500);
    });

    it('counts the timeout over the whole redirect chain', async () => {
      await expectCode(http.request(get(`${origin}/slow-loop`, { timeoutMs: 400, maxRedirects: 10 })), 'TIMEOUT');
    });

    it('aborts through the caller signal', async () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      await expectCode(http.request(get(`${origin}/hang`, { signal: controller.signal })), 'ABORTED');
      await expectCode(http.request(get(`${origin}/echo`, { signal: AbortSignal.abort() })), 'ABORTED');
    });
  });
  describe('with keepAlive', () => {
    /** Answers with the address the connection reached; counts the connections it accepted. */
    const wide = createServer((req, res) => res.end(req.socket.localAddress));
    let connections = 0;
    wide.on('connection', () => connections++);
    let port: number;

    beforeAll(async () => {
      await new Promise<void>((resolve) => wide.listen(0, '0.0.0.0', resolve));
      port = (wide.address() as AddressInfo).port;
    });
    afterAll(async () => {
      wide.closeAllConnections();
      await new Promise((resolve) => wide.close(resolve));
    });
    beforeEach(() => (connections = 0));

    it('reuses one connection for requests to the same checked address', async () => {
      const http = client('127.0.0.0/8');
      for (let i = 0; i < 3; i++) {
        const response = await http.request(get(`http://127.0.0.1:${port}/`, { keepAlive: true }));
        expect(response.body.toString()).toBe('127.0.0.1');
      }
      expect(connections).toBe(1);
    });

    it('opens a new connection to the new, checked address when the name rebinds', async () => {
      const resolver = scriptedResolver(['127.0.0.1'], ['127.0.0.2'], ['10.0.0.7']);
      const http = client('127.0.0.0/8', resolver);
      const at = (more: Partial<OutboundRequest> = {}) =>
        http.request(get(`http://hooks.example.test:${port}/`, { keepAlive: true, ...more }));
      expect((await at()).body.toString()).toBe('127.0.0.1');
      expect((await at()).body.toString()).toBe('127.0.0.2');
      expect(connections).toBe(2);
      // A pooled socket to an allowed address does not carry a request whose name now resolves elsewhere.
      await expectCode(at(), 'ADDRESS_NOT_ALLOWED');
      expect(connections).toBe(2);
    });

    it('sends a request again on a fresh connection when the pooled one was closed by the receiver as it was reused', async () => {
      // Each connection answers its first request and resets on its second without reading it:
      // the receiver closing an idle connection just as the pool hands it out again.
      const served = new WeakMap<object, number>();
      const seen: string[] = [];
      const closing = createServer((req, res) => {
        const count = (served.get(req.socket) ?? 0) + 1;
        served.set(req.socket, count);
        if (count > 1) return req.socket.destroy();
        seen.push(req.headers['x-n'] as string);
        req.resume().on('end', () => res.end(`answer ${String(req.headers['x-n'])}`));
      });
      await new Promise<void>((resolve) => closing.listen(0, '127.0.0.1', resolve));
      const at = `http://127.0.0.1:${(closing.address() as AddressInfo).port}/`;
      try {
        const http = client('127.0.0.0/8');
        const send = (n: string) =>
          http.request({ method: 'POST', url: at, headers: { 'x-n': n }, body: 'x', timeoutMs: 5000, keepAlive: true });
        expect((await send('1')).body.toString()).toBe('answer 1');
        expect((await send('2')).body.toString()).toBe('answer 2');
        expect(seen).toEqual(['1', '2']);
      } finally {
        closing.closeAllConnections();
        await new Promise((resolve) => closing.close(resolve));
      }
    });

    it('does not send a request again when a fresh connection is reset', async () => {
      let requests = 0;
      const resetting = createServer((req) => {
        requests++;
        req.socket.destroy();
      });
      await new Promise<void>((resolve) => resetting.listen(0, '127.0.0.1', resolve));
      try {
        const http = client('127.0.0.0/8');
        const port = (resetting.address() as AddressInfo).port;
        await expectCode(http.request(get(`http://127.0.0.1:${port}/`, { keepAlive: true })), 'CONNECT_FAILED');
        expect(requests).toBe(1);
      } finally {
        await new Promise((resolve) => resetting.close(resolve));
      }
    });
  });
});
