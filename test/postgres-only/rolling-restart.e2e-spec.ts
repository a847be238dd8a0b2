import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { install, registerAgent } from '../support/agents';
import { CaddyProxy, startCaddy } from '../support/caddy';
import { eventually } from '../support/eventually';
import { ServiceProcess, startService } from '../support/service-process';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';

/**
 * The compose shape on loopback: two API processes (APP_ROLE=api) and a worker, behind
 * deploy/Caddyfile run by Debian's caddy over HTTPS. Clients keep reading and executing while
 * each API process in turn gets SIGTERM and is started again, as `docker-compose up -d
 * --no-deps api-1` then `api-2` do. The API processes keep the default SHUTDOWN_DRAIN_MS.
 */
const SECRETS_KEY = randomBytes(32).toString('hex');
const API_ENV = { APP_ROLE: 'api', SECRETS_KEY, TRUST_PROXY: '1' };
const WORKER_ENV = { APP_ROLE: 'worker', SECRETS_KEY };
/** Between two requests of one client: 4 clients stay well under the enterprise rate limit. */
const CLIENT_PAUSE_MS = 150;

jest.setTimeout(240_000);

/** Requests to /api/* a process has answered, from its own /metrics. */
async function apiRequestsServed(api: ServiceProcess): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${api.port}/metrics`, { headers: { authorization: `Bearer ${process.env.METRICS_TOKEN}` } });
  const text = await res.text();
  let total = 0;
  for (const match of text.matchAll(/^http_requests_total\{[^}]*route="\/api\/[^"]*"[^}]*\} (\d+)$/gm)) total += Number(match[1]);
  return total;
}

describe('rolling restart behind the HTTPS entry point', () => {
  let t: TestApp;
  let org: TestOrg;
  let agentId: string;
  let caddy: CaddyProxy;
  const apis: ServiceProcess[] = [];
  let worker: ServiceProcess;

  beforeAll(async () => {
    t = await createTestApp({ env: { APP_ROLE: 'api', SECRETS_KEY } });
    org = await t.newOrg('enterprise');
    await install(t, org, 'transform');
    agentId = await registerAgent(t, org, { kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } });
    worker = await startService(WORKER_ENV);
    apis.push(await startService(API_ENV), await startService(API_ENV));
    caddy = await startCaddy(apis.map((api) => `127.0.0.1:${api.port}`));
  });
  afterAll(async () => {
    await caddy?.close();
    await Promise.all([...apis, worker].filter(Boolean).map((p) => p.kill()));
    await t?.close();
  });

  const viaProxy = () => request(caddy.url);

  it('serves HTTPS with HSTS and redirects plain HTTP to it', async () => {
    const res = await viaProxy().get(`/api/agents/${agentId}`).ca(caddy.ca).set(bearer(org.viewer));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: agentId, kind: 'transform.jsonata' });
    expect(res.headers['strict-transport-security']).toBe('max-age=31536000');

    const plain = await request(caddy.httpUrl).get(`/api/agents/${agentId}?x=1`).redirects(0);
    expect(plain.status).toBe(308);
    // To the same path over HTTPS; Caddy leaves its HTTPS port out (443 under compose, a free one here).
    expect(plain.headers.location).toBe(`https://localhost/api/agents/${agentId}?x=1`);
  });

  it('fails no request and loses no execution while each API process is restarted in turn', async () => {
    const failures: string[] = [];
    const executions = new Map<string, string>(); // id -> the text it was given
    let answered = 0;
    let running = true;

    /** One client: sends, records anything but a 2xx (or no answer at all), pauses, repeats. */
    const client = async (next: (i: number) => request.Test, onOk: (res: request.Response) => void = () => {}) => {
      for (let i = 0; running; i++) {
        const req = next(i);
        try {
          const res = await req;
          if (res.status >= 200 && res.status < 300) onOk(res);
          else failures.push(`${req.method} ${req.url}: ${res.status} ${res.text}`);
        } catch (error) {
          failures.push(`${req.method} ${req.url}: ${(error as Error).message}`);
        }
        answered++;
        await new Promise((resolve) => setTimeout(resolve, CLIENT_PAUSE_MS));
      }
    };
    const executor = (name: string) =>
      client(
        (i) =>
          viaProxy()
            .post(`/api/agents/${agentId}/execute?wait=0`)
            .ca(caddy.ca)
            .set(bearer(org.member))
            .send({ input: { text: `${name}-${i}` } }),
        (res) => executions.set(res.body.id as string, res.body.input.text as string),
      );
    const reader = () =>
      client((i) => {
        const last = [...executions.keys()].at(-1);
        const path = i % 2 === 0 || !last ? `/api/agents/${agentId}` : `/api/agents/${agentId}/history/${last}`;
        return viaProxy().get(path).ca(caddy.ca).set(bearer(org.viewer));
      });
    const clients = Promise.all([executor('a'), executor('b'), reader(), reader()]);

    try {
      await eventually(() => executions.size >= 20, { timeoutMs: 30_000, message: 'the load to get going' });
      for (let i = 0; i < apis.length; i++) {
        const old = apis[i];
        const answeredBefore = answered;
        old.child.kill('SIGTERM');

        // Draining: out of the balancer's rotation, still serving whatever reaches it.
        await eventually(() => fetch(`http://127.0.0.1:${old.port}/health/ready`).then((r) => r.status === 503), {
          message: `process ${i + 1} to answer /health/ready with 503 after SIGTERM`,
        });
        const direct = await fetch(`http://127.0.0.1:${old.port}/api/agents/${agentId}`, { headers: bearer(org.viewer) });
        expect(direct.status).toBe(200);
        expect(direct.headers.get('connection')).toBe('close');
        const ended = await old.exited;
        // Nest shut down and the signal ended the process; exit code 1 would be the grace watchdog.
        expect(ended.signal === 'SIGTERM' || ended.code === 0).toBe(true);

        const restarted = await startService(API_ENV, { port: old.port });
        apis[i] = restarted;
        // Back in rotation once Caddy's health check sees it ready: it answers API requests again.
        await eventually(async () => (await apiRequestsServed(restarted)) > 0, {
          timeoutMs: 30_000,
          message: `the restarted process ${i + 1} to get requests through Caddy`,
        });
        expect(answered - answeredBefore).toBeGreaterThan(20);
      }
    } finally {
      running = false;
      await clients;
    }

    expect(failures).toEqual([]);
    expect(executions.size).toBeGreaterThan(50);

    // Every execution accepted ends succeeded with its own result, as the API reports it.
    const succeeded = new Map<string, unknown>();
    const unfinished = () => [...executions.keys()].filter((id) => !succeeded.has(id));
    await eventually(
      async () => {
        let cursor: string | undefined;
        do {
          const page = await viaProxy()
            .get(`/api/agents/${agentId}/history`)
            .query({ status: 'succeeded', limit: 100, ...(cursor ? { cursor } : {}) })
            .ca(caddy.ca)
            .set(bearer(org.viewer));
          expect(page.status).toBe(200);
          for (const execution of page.body.data as Array<{ id: string; output: unknown }>) succeeded.set(execution.id, execution.output);
          cursor = page.body.nextCursor ?? undefined;
        } while (cursor);
        return unfinished().length === 0;
      },
      { timeoutMs: 60_000, intervalMs: 500, message: () => `${unfinished().length} executions to succeed` },
    );
    for (const [id, text] of executions) expect(succeeded.get(id)).toBe(text.toUpperCase());
  });
});
