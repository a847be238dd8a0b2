import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import request from 'supertest';
import { secretFormsOf, withCharacterChanged, withKey } from '../support/api-keys';
import { eventually } from '../support/eventually';
import { ServiceProcess, startService } from '../support/service-process';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';

/**
 * API keys across instances, and in the log. This test's app is one instance; a service
 * process started with startService() is another (same database, JWT secret and SECRETS_KEY).
 * - A revoke on one instance is refused on the other within one second (the issue: "401 on two
 *   instances within a second"; caches live at most 500 ms). That is the one timing assertion.
 * - The keys appear in no line the process writes at LOG_LEVEL=trace, through create, use,
 *   list, rotate and revoke, nor in any answer but the create's and the rotate's.
 */
const SECRETS_KEY = randomBytes(32).toString('hex');
const INVALID_KEY = { error: { code: 'UNAUTHORIZED', message: 'The API key is not valid', status: 401 } };

jest.setTimeout(120_000);

describe('API keys on two instances', () => {
  let t: TestApp;
  let org: TestOrg;
  let service: ServiceProcess | undefined;

  beforeAll(async () => {
    // This app serves the key management calls and works no jobs.
    t = await createTestApp({ env: { APP_ROLE: 'api', SECRETS_KEY } });
    org = await t.newOrg('team');
  });

  afterAll(async () => {
    await service?.kill();
    await t.close();
  });

  it('refuses a key revoked on one instance on the other within one second', async () => {
    service = await startService({ APP_ROLE: 'api', SECRETS_KEY });
    const remote = () => request(`http://127.0.0.1:${service!.port}`);

    const account = await t.http().post('/api/service-accounts').set(bearer(org.admin)).send({ name: 'ci', role: 'admin' });
    expect(account.status).toBe(201);
    const path = `/api/service-accounts/${account.body.id as string}/api-keys`;
    const created = await t.http().post(path).set(bearer(org.admin)).send({ name: 'deploy' });
    expect(created.status).toBe(201);
    const key = created.body.key as string;
    const bystander = await t.http().post(path).set(bearer(org.admin)).send({ name: 'stays' });
    expect(bystander.status).toBe(201);

    // Both instances accept it (and may now hold it in their caches), up to the revoke.
    for (let i = 0; i < 5; i++) {
      expect((await t.http().get('/api/agents').set(withKey(key))).status).toBe(200);
      expect((await remote().get('/api/agents').set(withKey(key))).status).toBe(200);
    }

    const revoked = await t
      .http()
      .delete(`${path}/${created.body.id as string}`)
      .set(bearer(org.admin));
    const revokedAt = performance.now();
    expect(revoked.status).toBe(204);

    let last: unknown;
    const refused = await eventually(
      async () => {
        const res = await remote().get('/api/agents').set(withKey(key));
        last = { status: res.status, body: res.body as unknown };
        return res.status !== 200 && res;
      },
      { timeoutMs: 10_000, intervalMs: 10, message: () => `the other instance to refuse the key (last: ${JSON.stringify(last)})` },
    );
    const elapsedMs = performance.now() - revokedAt;
    expect({ status: refused.status, body: refused.body as unknown }).toEqual({ status: 401, body: INVALID_KEY });
    expect(elapsedMs).toBeLessThan(1000);

    // And it stays refused on both; the account's other key still works on both.
    for (let i = 0; i < 3; i++) {
      expect((await remote().get('/api/agents').set(withKey(key))).status).toBe(401);
      expect((await t.http().get('/api/agents').set(withKey(key))).status).toBe(401);
    }
    expect(
      (
        await remote()
          .get('/api/agents')
          .set(withKey(bystander.body.key as string))
      ).status,
    ).toBe(200);

    // A rotation without grace on the other instance: the old secret is refused here, the new one works here.
    const rotated = await remote()
      .post(`${path}/${bystander.body.id as string}/rotate`)
      .set(bearer(org.admin))
      .send({ graceSeconds: 0 });
    expect(rotated.status).toBe(200);
    await eventually(
      async () =>
        (
          await t
            .http()
            .get('/api/agents')
            .set(withKey(bystander.body.key as string))
        ).status === 401,
      {
        intervalMs: 50,
        message: 'the rotated-out key to be refused on this instance',
      },
    );
    expect(
      (
        await t
          .http()
          .get('/api/agents')
          .set(withKey(rotated.body.key as string))
      ).status,
    ).toBe(200);

    await service.kill('SIGTERM');
    service = undefined;
  });

  it('never writes a key to the log at LOG_LEVEL=trace, nor shows it after the create or rotate', async () => {
    service = await startService({ APP_ROLE: 'all', SECRETS_KEY, LOG_LEVEL: 'trace' }, { captureOutput: true });
    const api = () => request(`http://127.0.0.1:${service!.port}`);
    /** Every answer, to check for the keys at the end. */
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
    const agentId = agent.body.id as string;

    const account = keep('account', await api().post('/api/service-accounts').set(bearer(org.admin)).send({ name: 'logs', role: 'admin' }));
    expect(account.status).toBe(201);
    const path = `/api/service-accounts/${account.body.id as string}/api-keys`;

    const created = keep('create', await api().post(path).set(bearer(org.admin)).send({ name: 'deploy' }));
    expect(created.status).toBe(201);
    const key = created.body.key as string;
    const keyId = created.body.id as string;

    // Use: reads, an execution, a refused write (bad body), a session-only route, a key with a changed character.
    expect(keep('use: list', await api().get('/api/agents').set(withKey(key))).status).toBe(200);
    expect(keep('use: get', await api().get(`/api/agents/${agentId}`).set(withKey(key))).status).toBe(200);
    const executed = keep(
      'use: execute',
      await api()
        .post(`/api/agents/${agentId}/execute?wait=30`)
        .set(withKey(key))
        .send({ input: { text: 'hello' } }),
    );
    expect(executed.status).toBe(200);
    expect(executed.body).toMatchObject({ status: 'succeeded', triggeredBy: { type: 'api_key', id: keyId } });
    expect(keep('use: bad body', await api().post('/api/agents').set(withKey(key)).send({ nope: true })).status).toBe(400);
    expect(keep('use: session-only', await api().get('/api/auth/me').set(withKey(key))).status).toBe(403);
    expect(
      keep(
        'use: changed',
        await api()
          .get('/api/agents')
          .set(withKey(withCharacterChanged(key, -1))),
      ).status,
    ).toBe(401);

    expect(keep('list', await api().get(path).set(bearer(org.admin))).status).toBe(200);

    const rotated = keep('rotate', await api().post(`${path}/${keyId}/rotate`).set(bearer(org.admin)).send({ graceSeconds: 60 }));
    expect(rotated.status).toBe(200);
    const newKey = rotated.body.key as string;
    expect(newKey).not.toBe(key);
    expect(keep('use old in grace', await api().get('/api/agents').set(withKey(key))).status).toBe(200);
    expect(keep('use new', await api().get('/api/agents').set(withKey(newKey))).status).toBe(200);
    expect(keep('list after rotate', await api().get(path).set(bearer(org.admin))).status).toBe(200);

    // A personal key too.
    const personal = keep('personal create', await api().post('/api/auth/me/api-keys').set(bearer(org.member)).send({ name: 'laptop' }));
    expect(personal.status).toBe(201);
    const personalKey = personal.body.key as string;
    expect(keep('personal use', await api().get('/api/agents').set(withKey(personalKey))).status).toBe(200);
    expect(keep('personal list', await api().get('/api/auth/me/api-keys').set(bearer(org.member))).status).toBe(200);
    expect(
      keep(
        'personal revoke',
        await api()
          .delete(`/api/auth/me/api-keys/${personal.body.id as string}`)
          .set(bearer(org.member)),
      ).status,
    ).toBe(204);

    expect(keep('revoke', await api().delete(`${path}/${keyId}`).set(bearer(org.admin))).status).toBe(204);
    for (const [what, value] of [
      ['new', newKey],
      ['old', key],
      ['personal', personalKey],
    ] as const) {
      const refused = await eventually(
        async () => {
          const res = await api().get('/api/agents').set(withKey(value));
          return res.status === 401 && res;
        },
        { intervalMs: 50, message: `the revoked ${what} key to be refused` },
      );
      keep(`refused ${what}`, refused);
    }
    expect(keep('events', await api().get(`/api/api-keys/${keyId}/events`).set(bearer(org.admin))).status).toBe(200);
    expect(keep('list after revoke', await api().get(path).set(bearer(org.admin))).status).toBe(200);

    // Graceful shutdown: everything the process wrote has been read.
    await service.kill('SIGTERM');
    const output = service.output();
    service = undefined;
    // The capture works and holds the request log at this level: a check that can fail.
    expect(output.length).toBeGreaterThan(0);
    expect(output).toContain(`${path}/${keyId}/rotate`);
    expect(output).toContain('/api/auth/me/api-keys');

    const leaked = (text: string, values: string[]) => values.filter((value) => text.includes(value));
    expect(leaked(output, [...secretFormsOf(key), ...secretFormsOf(newKey), ...secretFormsOf(personalKey)])).toEqual([]);

    // Each key shows in the answer that made it and in no other.
    const shownIn = (value: string) =>
      answers.filter(({ body }) => leaked(JSON.stringify(body), secretFormsOf(value)).length > 0).map((a) => a.what);
    expect(shownIn(key)).toEqual(['create']);
    expect(shownIn(newKey)).toEqual(['rotate']);
    expect(shownIn(personalKey)).toEqual(['personal create']);
  });
});
