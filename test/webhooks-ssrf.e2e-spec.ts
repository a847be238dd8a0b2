import { isIP } from 'node:net';
import type { Response } from 'supertest';
import { parseAllowList } from '../src/shared/outbound/address-policy';
import { OutboundHttp } from '../src/shared/outbound/outbound-http';
import type { Resolver } from '../src/shared/outbound/outbound-http.types';
import { install, registerAgent } from './support/agents';
import { eventually } from './support/eventually';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';
import { Receiver } from './support/webhook-receiver';

/**
 * The SSRF guard against host names whose DNS answer changes (DNS rebinding). The app's
 * OutboundHttp asks a resolver the test controls; only the address 127.0.0.1 is allow-listed
 * (the loopback receiver), so a name that answered 127.0.0.1 when the endpoint was saved and
 * answers a private or link-local address later must be refused when a delivery is sent.
 *
 * A failed attempt is retried about 5 s later: the tests assert on the first attempt only.
 */
const ALLOWLIST = '127.0.0.1';

/** A DNS the test answers: host name -> addresses; an unknown name fails as ENOTFOUND. */
class FakeDns {
  private readonly answers = new Map<string, string[]>();

  answer(hostname: string, ...addresses: string[]): void {
    this.answers.set(hostname, addresses);
  }

  readonly resolve: Resolver = async (hostname) => {
    const addresses = this.answers.get(hostname);
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: isIP(address) === 6 ? 6 : 4 }));
  };
}

interface DeliveryAttempt {
  attemptedAt: string;
  statusCode: number | null;
  latencyMs: number;
  responseBody: string | null;
  error: string | null;
}

interface DeliveryDetail {
  id: string;
  type: string;
  status: string;
  attempts: number;
  error: { code: string; message: string } | null;
  payload: { type: string; data: { id: string } };
  attemptLog: DeliveryAttempt[];
}

/** The one error envelope, naming `url` in its details. */
function expectUrlRefused(res: Response): void {
  expect({ status: res.status, body: res.body as unknown }).toEqual({
    status: 400,
    body: {
      error: {
        code: 'VALIDATION_FAILED',
        message: expect.stringMatching(/^The webhook URL is not allowed: /),
        status: 400,
        details: [{ path: 'url', message: expect.any(String) }],
      },
    },
  });
}

describe('webhooks: the SSRF guard against DNS rebinding', () => {
  const dns = new FakeDns();
  let t: TestApp;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    t = await createTestApp({
      env: { OUTBOUND_ALLOWLIST: ALLOWLIST },
      overrides: [{ provide: OutboundHttp, useValue: new OutboundHttp({ allowList: parseAllowList(ALLOWLIST), resolver: dns.resolve }) }],
    });
  });

  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  /** A team organization with a transform.jsonata agent: its executions raise agent.execution.* events. */
  async function teamWithAgent(): Promise<{ org: TestOrg; agentId: string }> {
    const org = await t.newOrg('team');
    await install(t, org, 'transform');
    const agentId = await registerAgent(t, org, { kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } });
    return { org, agentId };
  }

  async function createEndpoint(org: TestOrg, url: string): Promise<string> {
    const res = await t
      .http()
      .post('/api/webhooks')
      .set(bearer(org.admin))
      .send({ url, eventTypes: ['agent.execution.*'] });
    expect(res.status).toBe(201);
    expect(res.body.url).toBe(url);
    return res.body.id as string;
  }

  async function execute(org: TestOrg, agentId: string, text: string): Promise<string> {
    const res = await t.http().post(`/api/agents/${agentId}/execute?wait=30`).set(bearer(org.admin)).send({ input: { text } });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('succeeded');
    return res.body.id as string;
  }

  /**
   * The delivery log entry of the execution's event, once its first attempt is logged and its
   * outcome recorded (the message's `error` set on failure, or its status final).
   */
  async function loggedDelivery(org: TestOrg, endpointId: string, executionId: string): Promise<DeliveryDetail> {
    let seen = 'nothing';
    return eventually(
      async () => {
        const list = await t.http().get(`/api/webhooks/${endpointId}/deliveries`).set(bearer(org.viewer));
        expect(list.status).toBe(200);
        for (const { id } of list.body.data as Array<{ id: string }>) {
          const res = await t.http().get(`/api/webhooks/${endpointId}/deliveries/${id}`).set(bearer(org.viewer));
          expect(res.status).toBe(200);
          const detail = res.body as DeliveryDetail;
          if (detail.payload.data.id !== executionId) continue;
          seen = JSON.stringify(detail);
          const outcome = detail.status === 'succeeded' || detail.error !== null;
          if (detail.attemptLog.length > 0 && outcome) return detail;
        }
        return null;
      },
      {
        timeoutMs: 20_000,
        intervalMs: 100,
        message: () => `the first attempt of execution ${executionId} to be logged (last seen: ${seen})`,
      },
    );
  }

  const deliveriesOf = (path: string, executionId: string) =>
    receiver.on(path).filter((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id === executionId);

  /** What the log shows for a delivery the guard refused: no answer, an error naming the refusal and the address. */
  function expectRefusedAttempt(detail: DeliveryDetail, hostname: string, address: string): void {
    const refusal = `ADDRESS_NOT_ALLOWED: Outbound requests to ${hostname} (resolved to ${address}) are not allowed; to allow an internal target, add it to OUTBOUND_ALLOWLIST`;
    expect(detail.type).toBe('agent.execution.succeeded');
    expect(detail.status).toBe('pending');
    expect(detail.error).toEqual({ code: 'DELIVERY_FAILED', message: refusal });
    expect(detail.attemptLog[0]).toEqual({
      attemptedAt: expect.any(String),
      statusCode: null,
      latencyMs: expect.any(Number),
      responseBody: null,
      error: refusal,
    });
  }

  it('refuses a delivery once the name that resolved to the allow-listed receiver resolves to a private address', async () => {
    const hostname = 'hooks.rebind.test';
    const path = '/rebind-private';
    const { org, agentId } = await teamWithAgent();
    dns.answer(hostname, '127.0.0.1');
    const endpointId = await createEndpoint(org, `http://${hostname}:${receiver.port}${path}`);

    // While the name answers 127.0.0.1 the endpoint works (and a kept-alive connection to it may be pooled).
    const before = await execute(org, agentId, 'before');
    const delivered = await loggedDelivery(org, endpointId, before);
    expect(delivered.status).toBe('succeeded');
    expect(delivered.attemptLog[0]).toMatchObject({ statusCode: 204, error: null });
    expect(deliveriesOf(path, before)).toHaveLength(1);

    dns.answer(hostname, '10.20.30.40');
    const after = await execute(org, agentId, 'after');
    expectRefusedAttempt(await loggedDelivery(org, endpointId, after), hostname, '10.20.30.40');
    // The attempt is logged after the request was refused: nothing reached the receiver, over
    // a new connection or one kept from before.
    expect(deliveriesOf(path, after)).toEqual([]);
    expect(receiver.on(path)).toHaveLength(1);
  });

  it('refuses a delivery once the name resolves to the cloud metadata address', async () => {
    const hostname = 'metadata.rebind.test';
    const path = '/rebind-metadata';
    const { org, agentId } = await teamWithAgent();
    dns.answer(hostname, '127.0.0.1');
    const endpointId = await createEndpoint(org, `http://${hostname}:${receiver.port}${path}`);

    dns.answer(hostname, '169.254.169.254');
    const executionId = await execute(org, agentId, 'metadata');
    expectRefusedAttempt(await loggedDelivery(org, endpointId, executionId), hostname, '169.254.169.254');
    expect(receiver.on(path)).toEqual([]);
  });

  it.each([
    ['the cloud metadata address', 'meta.create.test', ['169.254.169.254']],
    ['a private address', 'intranet.create.test', ['10.1.2.3']],
    ['the allow-listed address and a private one', 'mixed.create.test', ['127.0.0.1', '10.1.2.3']],
  ])('refuses to save a URL whose host name resolves to %s, with 400 naming url', async (_case, hostname, addresses) => {
    const org = await t.newOrg('team');
    dns.answer(hostname, ...addresses);
    const url = `http://${hostname}:${receiver.port}/create`;
    const refused = await t
      .http()
      .post('/api/webhooks')
      .set(bearer(org.admin))
      .send({ url, eventTypes: ['agent.execution.*'] });
    expectUrlRefused(refused);
    expect(refused.body.error.message).toMatch(/10\.1\.2\.3|169\.254\.169\.254/);
    expect((await t.http().get('/api/webhooks').set(bearer(org.viewer))).body).toEqual({ data: [], nextCursor: null });

    // Nor may an endpoint saved with a good name be moved to it; the refused change changes nothing.
    dns.answer('good.create.test', '127.0.0.1');
    const good = `http://good.create.test:${receiver.port}/create`;
    const id = await createEndpoint(org, good);
    const patch = await t.http().patch(`/api/webhooks/${id}`).set(bearer(org.admin)).send({ url, description: 'moved' });
    expectUrlRefused(patch);
    expect((await t.http().get(`/api/webhooks/${id}`).set(bearer(org.viewer))).body).toMatchObject({ url: good, description: null });
  });
});
