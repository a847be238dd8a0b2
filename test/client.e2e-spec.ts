import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pages, PlatformError, signIn, unwrap } from '../clients/typescript/src';
import { createTestApp, PASSWORD, TestApp } from './support/test-app';

const ROOT = join(__dirname, '..');

/** `node clients/typescript/generate.mjs --check <document>`, as `npm run lint:client` runs it (on openapi.json). */
function checkTypes(document: string): Promise<number | null> {
  const child = spawn(process.execPath, [join(ROOT, 'clients/typescript/generate.mjs'), '--check', document], {
    cwd: ROOT,
    stdio: 'ignore',
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
}

describe('the typed TypeScript client (clients/typescript)', () => {
  let t: TestApp;
  let baseUrl: string;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    baseUrl = `http://127.0.0.1:${port}`;
  });
  afterAll(() => t.close());

  it('walks the walkthrough: sign in, execute an agent, run a workflow, page the run history', async () => {
    const org = await t.newOrg();
    const { client, tokens } = await signIn({ baseUrl, email: org.admin.email, password: PASSWORD });
    expect(tokens).toMatchObject({ tokenType: 'Bearer', refreshToken: expect.stringMatching(/^rt_/) });
    const me = unwrap(await client.GET('/api/auth/me'));
    expect(me).toMatchObject({ user: { email: org.admin.email, role: 'admin' }, organization: { slug: org.slug } });

    unwrap(await client.POST('/api/plugins/{slug}/install', { params: { path: { slug: 'transform' } }, body: {} }));
    const agent = unwrap(
      await client.POST('/api/agents', {
        body: { name: 'shout', kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } },
      }),
    );
    const execution = unwrap(
      await client.POST('/api/agents/{id}/execute', {
        params: { path: { id: agent.id }, query: { wait: 30 }, header: { 'Idempotency-Key': 'order-42' } },
        body: { input: { text: 'hi' } },
      }),
    );
    expect(execution).toMatchObject({ agentId: agent.id, status: 'succeeded', output: 'HI', attempts: 1 });

    const workflow = unwrap(
      await client.POST('/api/workflows', {
        body: {
          name: 'greet',
          inputSchema: { type: 'object', required: ['name'] },
          steps: [
            { id: 'shout', agent: agent.id, input: "{ 'text': 'hello ' & input.name }" },
            {
              id: 'punctuate',
              action: 'transform.jsonata',
              with: { expression: "greeting & '!'" },
              needs: ['shout'],
              input: "{ 'greeting': steps.shout.output }",
            },
          ],
          output: "{ 'message': steps.punctuate.output }",
        },
      }),
    );
    expect(workflow.version).toBe(1);

    const names = ['Ada', 'Grace', 'Edsger', 'Barbara', 'Alan'];
    const started: string[] = [];
    for (const name of names) {
      const run = unwrap(
        await client.POST('/api/workflows/{id}/run', {
          params: { path: { id: workflow.id }, query: { wait: 30 } },
          body: { input: { name } },
        }),
      );
      expect(run).toMatchObject({ status: 'succeeded', output: { message: `HELLO ${name.toUpperCase()}!` } });
      started.push(run.id);
    }

    // Two runs a page: three pages, the last with nextCursor null, newest first.
    const cursors: Array<string | undefined> = [];
    const seen: string[] = [];
    const history = pages(async (cursor) => {
      cursors.push(cursor);
      return unwrap(await client.GET('/api/workflows/{id}/runs', { params: { path: { id: workflow.id }, query: { limit: 2, cursor } } }));
    });
    for await (const run of history) {
      expect(run).toMatchObject({ workflowId: workflow.id, status: 'succeeded' });
      seen.push(run.id);
    }
    expect(seen).toEqual([...started].reverse());
    expect(cursors).toHaveLength(3);
    expect(cursors[0]).toBeUndefined();

    const one = unwrap(await client.GET('/api/workflows/{id}/runs/{runId}', { params: { path: { id: workflow.id, runId: started[0] } } }));
    expect(one.steps?.map((step) => [step.id, step.status])).toEqual([
      ['shout', 'succeeded'],
      ['punctuate', 'succeeded'],
    ]);
  });

  it('answers errors in their envelope, and unwrap throws them as PlatformError', async () => {
    const org = await t.newOrg();
    const { client } = await signIn({ baseUrl, email: org.viewer.email, password: PASSWORD });
    const missing = await client.GET('/api/agents/{id}', { params: { path: { id: randomUUID() } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.error.code).toBe('AGENT_NOT_FOUND');
    expect(() => unwrap(missing)).toThrow(PlatformError);

    const refused = await client.POST('/api/agents', { body: { name: 'x', kind: 'transform.jsonata', config: { expression: '1' } } });
    const error = (() => {
      try {
        unwrap(refused);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).toMatchObject({ status: 403, code: 'FORBIDDEN' });

    await expect(signIn({ baseUrl, email: org.viewer.email, password: 'not the password' })).rejects.toMatchObject({
      status: 401,
      code: 'INVALID_CREDENTIALS',
    });
  });

  it("fails the types check when clients/typescript/src/schema.d.ts is stale against openapi.json (npm run lint's lint:client)", async () => {
    expect(await checkTypes('openapi.json')).toBe(0);
    const changed = join(tmpdir(), `openapi-changed-${process.pid}.json`);
    const document = JSON.parse(readFileSync(join(ROOT, 'openapi.json'), 'utf8')) as { components: { schemas: Record<string, object> } };
    document.components.schemas.AddedByTheTest = { type: 'object', properties: { id: { type: 'string' } } };
    writeFileSync(changed, JSON.stringify(document));
    try {
      expect(await checkTypes(changed)).toBe(1);
    } finally {
      rmSync(changed, { force: true });
    }
  });
});
