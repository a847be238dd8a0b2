import { install, registerAgent } from './support/agents';
import { eventually } from './support/eventually';
import { answer, FakeLlm, sentBody, startFakeLlm, toolCalls } from './support/fake-llm';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

jest.setTimeout(60_000);

const OBJECT = { type: 'object' };
const jsonata = (expression: string) => ({ action: 'transform.jsonata', with: { expression } });

/**
 * Agents that start workflows and workflows that run agents are one tree: a loop through an
 * agent's tools is refused when it is saved, like a loop of workflow steps, and the depth limit
 * (5) counts runs and executions alike, so an agent's tool run is one deeper than its execution.
 */
describe('agents and workflows starting one another', () => {
  let t: TestApp;
  let org: TestOrg;
  let llm: FakeLlm;

  beforeAll(async () => {
    llm = await startFakeLlm();
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    org = await t.newOrg('enterprise');
    await install(t, org, 'transform');
    await install(t, org, 'llm', { baseUrl: llm.baseUrl, defaultModel: 'test-model' });
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });

  const defineWorkflow = async (definition: Record<string, unknown>): Promise<string> => {
    const res = await t.http().post('/api/workflows').set(bearer(org.admin)).send(definition);
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  const agentWith = (name: string, tools: unknown[]) =>
    registerAgent(t, org, { name, kind: 'llm.agent', config: { systemPrompt: 'Work.', tools }, maxAttempts: 1 });

  it('refuses, with WORKFLOW_CYCLE, an agent tool that would start the workflow that runs the agent', async () => {
    const clerk = await agentWith('clerk', []);
    const filing = await defineWorkflow({ name: 'filing', inputSchema: OBJECT, steps: [{ id: 'ask', agent: clerk }] });

    const res = await t
      .http()
      .patch(`/api/agents/${clerk}`)
      .set(bearer(org.admin))
      .send({ config: { systemPrompt: 'Work.', tools: [{ workflow: filing }] } });
    expect({ status: res.status, error: res.body.error as unknown }).toEqual({
      status: 400,
      error: { code: 'WORKFLOW_CYCLE', message: 'The agent would start itself: clerk -> filing -> clerk', status: 400 },
    });
    const saved = await t.http().get(`/api/agents/${clerk}`).set(bearer(org.viewer));
    expect(saved.body.config.tools).toEqual([]);
  });

  it('refuses, with WORKFLOW_CYCLE, a workflow whose agent step has the workflow among its tools', async () => {
    const target = await defineWorkflow({ name: 'archive', inputSchema: OBJECT, steps: [{ id: 'a', ...jsonata('$') }] });
    const archivist = await agentWith('archivist', [{ workflow: target }]);
    // Through another agent too: archive -> router -> archivist -> archive.
    const router = await agentWith('router', [{ agent: archivist, parameters: OBJECT }]);

    const direct = await t
      .http()
      .put(`/api/workflows/${target}`)
      .set(bearer(org.admin))
      .send({ name: 'archive', inputSchema: OBJECT, steps: [{ id: 'ask', agent: archivist }] });
    expect(direct.body.error).toEqual({
      code: 'WORKFLOW_CYCLE',
      message: 'The workflow would start itself: archive -> archivist -> archive',
      status: 400,
    });
    const mapped = await t
      .http()
      .put(`/api/workflows/${target}`)
      .set(bearer(org.admin))
      .send({ name: 'archive', inputSchema: OBJECT, steps: [{ id: 'each', map: { over: '[1]', step: { agent: router } } }] });
    expect(mapped.body.error).toMatchObject({
      code: 'WORKFLOW_CYCLE',
      message: 'The workflow would start itself: archive -> router -> archivist -> archive',
    });
  });

  it("starts an agent's tool run one deeper than its execution: past depth 5 the model is told WORKFLOW_DEPTH", async () => {
    const leaf = await defineWorkflow({ name: 'leaf', inputSchema: OBJECT, steps: [{ id: 'a', ...jsonata('{"ok": true}') }] });
    const caller = await agentWith('deep caller', [{ workflow: leaf }]);
    // Runs at depths 0 to 5; the last runs the agent, whose execution is at depth 5 too.
    let next = await defineWorkflow({ name: 'depth 5', inputSchema: OBJECT, steps: [{ id: 'ask', agent: caller }] });
    for (let depth = 4; depth >= 0; depth -= 1)
      next = await defineWorkflow({ name: `depth ${depth}`, inputSchema: OBJECT, steps: [{ id: 'down', workflow: next, input: '{}' }] });

    const from = llm.requests.length;
    llm.script(toolCalls([{ id: 'call_leaf', name: 'workflow_leaf', arguments: {} }]), answer('could not'));
    const top = await t.http().post(`/api/workflows/${next}/run?wait=0`).set(bearer(org.member)).send({ input: {} });
    expect(top.status).toBe(202);
    await eventually(() => llm.requests.length >= from + 2, { timeoutMs: 30_000, message: 'the model to be asked twice' });
    const toolMessage = sentBody(llm.requests[from + 1]).messages.find((m) => m.role === 'tool');
    expect(String(toolMessage?.content)).toContain('WORKFLOW_DEPTH');
    const leafRuns = await t.http().get(`/api/workflows/${leaf}/runs`).set(bearer(org.viewer));
    expect(leafRuns.body.data).toEqual([]);
    // The model answered without it, and the whole chain finished.
    const finished = await eventually(
      async () => {
        const res = await t.http().get(`/api/workflows/${next}/runs/${top.body.id}`).set(bearer(org.viewer));
        return ['queued', 'running', 'waiting'].includes(res.body.status as string) ? undefined : res.body;
      },
      { timeoutMs: 30_000, message: 'the top run to finish' },
    );
    expect(finished.status).toBe('succeeded');
  });
});
