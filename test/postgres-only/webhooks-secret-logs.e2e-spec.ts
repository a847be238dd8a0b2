import { randomBytes } from 'node:crypto';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { ServiceProcess, startService } from '../support/service-process';
import { eventually } from '../support/eventually';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';

/**
 * A webhook's signing secret never reaches the service's log. One service process (API and
 * jobs, the most verbose log level) with its stdout and stderr collected; this test's app only
 * makes the organization and its tokens (same database, JWT secret and SECRETS_KEY). Through
 * the process's API: create an endpoint, send a test event, rotate the secret, deliver an
 * execution's event (each message fails once with a 500, so failures and retries are logged,
 * then is delivered), change, read and list. Then neither secret, its key bytes, nor any
 * signature the receiver got appears in what the process wrote.
 */
const SECRETS_KEY = randomBytes(32).toString('hex');
const ALLOWLIST = '127.0.0.1';

jest.setTimeout(120_000);

interface Delivery {
  webhookId: string;
  type: string;
  body: string;
  headers: IncomingHttpHeaders;
  answered: number;
}

/** A loopback receiver that answers 500 to the first delivery of each message and 200 to the rest. */
class FailOnceReceiver {
  readonly deliveries: Delivery[] = [];
  private readonly server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const webhookId = String(req.headers['webhook-id']);
      const answered = this.deliveries.some((d) => d.webhookId === webhookId) ? 200 : 500;
      const type = (JSON.parse(body) as { type: string }).type;
      this.deliveries.push({ webhookId, type, body, headers: req.headers, answered });
      res.writeHead(answered, { 'content-type': 'text/plain' }).end(answered === 200 ? 'ok' : 'try again');
    });
  });

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  listen(): Promise<void> {
    return new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The service's last warning and error lines (pino levels 40 and up), for a failure's message. */
function warnings(service: ServiceProcess): string {
  const lines = service
    .output()
    .split('\n')
    .filter((line) => /"level":(4|5|6)0/.test(line));
  return lines.slice(-20).join('\n') || 'none';
}

/** A secret in every form a log line could carry it: as shown, its base64 key and the key bytes in hex. */
function formsOf(secret: string): string[] {
  expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
  const base64 = secret.slice('whsec_'.length);
  return [secret, base64, Buffer.from(base64, 'base64').toString('hex')];
}

/** Every signature a webhook-signature header carries (`v1,<base64>`, space-separated), whole and its base64. */
function signaturesIn(header: string | string[] | undefined): string[] {
  expect(typeof header).toBe('string');
  return (header as string).split(' ').flatMap((signature) => {
    expect(signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    return [signature, signature.slice('v1,'.length)];
  });
}

describe('webhook signing secrets in the log', () => {
  let t: TestApp;
  let org: TestOrg;
  let service: ServiceProcess | undefined;
  const receiver = new FailOnceReceiver();

  beforeAll(async () => {
    // This app serves nothing the test sends to the process and works no jobs.
    t = await createTestApp({ env: { APP_ROLE: 'api', SECRETS_KEY, OUTBOUND_ALLOWLIST: ALLOWLIST } });
    org = await t.newOrg('team');
    await receiver.listen();
  });

  afterAll(async () => {
    await service?.kill();
    await t.close();
    await receiver.close();
  });

  it('appear in no line the service writes, at the most verbose level, nor in any answer after the create', async () => {
    service = await startService(
      { APP_ROLE: 'all', SECRETS_KEY, OUTBOUND_ALLOWLIST: ALLOWLIST, LOG_LEVEL: 'trace' },
      { captureOutput: true },
    );
    const api = () => request(`http://127.0.0.1:${service!.port}`);
    /** Every answer after the create, to check for the secrets at the end. */
    const answers: Array<{ what: string; body: unknown }> = [];
    const keep = (what: string, res: request.Response) => {
      answers.push({ what, body: res.body as unknown });
      return res;
    };

    expect([200, 201]).toContain((await api().post('/api/plugins/transform/install').set(bearer(org.admin)).send({ config: {} })).status);
    const agent = await api()
      .post('/api/agents')
      .set(bearer(org.admin))
      .send({ name: 'agent', kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } });
    expect(agent.status).toBe(201);

    const created = await api()
      .post('/api/webhooks')
      .set(bearer(org.admin))
      .send({ url: receiver.url, description: 'logs', eventTypes: ['agent.execution.*'] });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const secret = created.body.secret as string;

    // The test event's first attempt is answered 500.
    const tested = keep('test', await api().post(`/api/webhooks/${id}/test`).set(bearer(org.admin)));
    expect(tested.status).toBe(200);
    expect(tested.body.attempt).toMatchObject({ statusCode: 500, responseBody: 'try again', error: null });

    const rotated = keep(
      'rotate-secret',
      await api().post(`/api/webhooks/${id}/rotate-secret`).set(bearer(org.admin)).send({ graceSeconds: 60 }),
    );
    expect(rotated.status).toBe(200);
    const newSecret = rotated.body.secret as string;
    expect(newSecret).not.toBe(secret);

    const executed = await api()
      .post(`/api/agents/${agent.body.id as string}/execute?wait=30`)
      .set(bearer(org.admin))
      .send({ input: { text: 'hello' } });
    expect(executed.status).toBe(200);
    expect(executed.body.status).toBe('succeeded');

    // Both messages failed once (500) and were delivered on their retry, about 5 s later.
    let seen: unknown;
    const delivered = await eventually(
      async () => {
        const res = await api().get(`/api/webhooks/${id}/deliveries`).set(bearer(org.viewer));
        expect(res.status).toBe(200);
        seen = res.body;
        const data = res.body.data as Array<{ type: string; status: string }>;
        return data.length === 2 && data.every((m) => m.status === 'succeeded') && res;
      },
      {
        timeoutMs: 30_000,
        intervalMs: 250,
        message: () => `both messages to be delivered (last seen: ${JSON.stringify(seen)}; the service's warnings: ${warnings(service!)})`,
      },
    );
    keep('deliveries', delivered);
    expect(
      (delivered.body.data as Array<{ type: string; status: string; attempts: number }>)
        .map(({ type, status, attempts }) => ({ type, status, attempts }))
        .sort((a, b) => a.type.localeCompare(b.type)),
    ).toEqual([
      { type: 'agent.execution.succeeded', status: 'succeeded', attempts: 2 },
      { type: 'webhook.test', status: 'succeeded', attempts: 2 },
    ]);
    for (const { id: messageId } of delivered.body.data as Array<{ id: string }>) {
      const detail = keep('delivery', await api().get(`/api/webhooks/${id}/deliveries/${messageId}`).set(bearer(org.viewer)));
      expect(detail.status).toBe(200);
      expect((detail.body.attemptLog as Array<{ statusCode: number }>).map((a) => a.statusCode)).toEqual([500, 200]);
    }

    const patched = keep('patch', await api().patch(`/api/webhooks/${id}`).set(bearer(org.admin)).send({ description: 'logs, changed' }));
    expect(patched.status).toBe(200);
    expect(keep('get', await api().get(`/api/webhooks/${id}`).set(bearer(org.viewer))).body).toMatchObject({
      id,
      description: 'logs, changed',
    });
    expect(keep('list', await api().get('/api/webhooks').set(bearer(org.viewer))).body.data).toEqual([expect.objectContaining({ id })]);

    // Each message reached the receiver twice (500, then 200), signed: the test event's first
    // attempt with the first secret only, every later one with the new secret and, within the
    // grace window, the first one too.
    const byMessage = new Map<string, Delivery[]>();
    for (const d of receiver.deliveries) byMessage.set(d.webhookId, [...(byMessage.get(d.webhookId) ?? []), d]);
    expect(
      [...byMessage.values()]
        .map((ds) => ({ type: ds[0].type, answered: ds.map((d) => d.answered) }))
        .sort((a, b) => a.type.localeCompare(b.type)),
    ).toEqual([
      { type: 'agent.execution.succeeded', answered: [500, 200] },
      { type: 'webhook.test', answered: [500, 200] },
    ]);
    const [firstTest, ...later] = receiver.deliveries;
    expect(firstTest).toMatchObject({ type: 'webhook.test', answered: 500 });
    expect(String(firstTest.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => new Webhook(secret).verify(firstTest.body, firstTest.headers as Record<string, string>)).not.toThrow();
    for (const delivery of later) {
      expect(String(delivery.headers['webhook-signature']).split(' ')).toHaveLength(2);
      for (const key of [newSecret, secret]) {
        expect(() => new Webhook(key).verify(delivery.body, delivery.headers as Record<string, string>)).not.toThrow();
      }
    }
    const signatures = receiver.deliveries.flatMap((d) => signaturesIn(d.headers['webhook-signature']));
    expect(signatures).toHaveLength(2 * (1 + 2 + 2 + 2));

    // Graceful shutdown: everything the process wrote, its shutdown lines too, has been read.
    await service.kill('SIGTERM');
    const output = service.output();
    // The capture works and holds the request log at this level: a check that can fail.
    expect(output.length).toBeGreaterThan(0);
    expect(output).toContain(`/api/webhooks/${id}/rotate-secret`);
    expect(output).toContain(`/api/webhooks/${id}/test`);

    const leaked = (text: string, what: string[]) => what.filter((value) => text.includes(value));
    expect(leaked(output, [...formsOf(secret), ...formsOf(newSecret)])).toEqual([]);
    expect(leaked(output, signatures)).toEqual([]);

    // No answer after the create shows the first secret; only the rotation's shows the new one.
    for (const { what, body } of answers) {
      const text = JSON.stringify(body);
      expect({ what, leaked: leaked(text, formsOf(secret)) }).toEqual({ what, leaked: [] });
      if (what !== 'rotate-secret') expect({ what, leaked: leaked(text, formsOf(newSecret)) }).toEqual({ what, leaked: [] });
    }
    expect(answers.map((a) => a.what)).toEqual(['test', 'rotate-secret', 'deliveries', 'delivery', 'delivery', 'patch', 'get', 'list']);
  });
});
