import { rootFieldsUnder } from '../../../shared/expressions/expression-check';
import { ActionStep } from '../../runs/application/steps/action.step';
import { AgentStep } from '../../runs/application/steps/agent.step';
import { MapStep } from '../../runs/application/steps/map.step';
import { WorkflowStep } from '../../runs/application/steps/workflow.step';
import { SleepStep } from '../../runs/application/steps/sleep.step';
import { SwitchStep } from '../../runs/application/steps/switch.step';
import { DefinitionContext, definitionProblems, findCycle } from './definition';
import { nextSteps, StepGraph, StepStatus } from '../../runs/domain/run';

// The kinds' save-time rules need none of their collaborators.
const kinds = [
  new AgentStep(null as never),
  new ActionStep(null as never),
  new SleepStep(),
  new SwitchStep(),
  new MapStep(null as never),
  new WorkflowStep(null as never, null as never),
];

const context: DefinitionContext = {
  kinds,
  agentExists: (id) => id === '00000000-0000-4000-8000-000000000001',
  workflowExists: () => false,
  action: (q) => (q === 'transform.jsonata' ? 'ok' : q.startsWith('llm.') ? 'plugin-not-installed' : 'unknown'),
  actionConfigProblems: (_q, config) => (typeof config.expression === 'string' ? [] : [{ path: 'expression', message: 'is required' }]),
  compileProblem: (e) => (e.includes('(') && !e.includes(')') ? 'does not compile at position 1' : null),
  stepsRead: (e) => rootFieldsUnder(e, 'steps'),
  schemaProblems: (s, root) => (s.type === 'nonsense' ? [{ path: root, message: `${root} is not a valid JSON Schema: unknown type` }] : []),
};
const action = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  action: 'transform.jsonata',
  with: { expression: '$' },
  ...extra,
});

describe('definitionProblems', () => {
  it('accepts a valid graph', () => {
    expect(definitionProblems({ name: 'ok', steps: [action('a'), action('b', { needs: ['a'] })], output: 'steps' }, context)).toEqual([]);
  });

  it('refuses an input or if that reads a step it does not wait for, directly or further up its needs', () => {
    const steps = [
      action('upper'),
      action('middle', { needs: ['upper'], input: 'steps.upper.output' }),
      action('last', { needs: ['middle'], input: '{"a": steps.upper.output, "b": $.steps.middle.output}' }),
      action('eager', { input: 'steps.upper.output & "!"', if: 'steps.`last`.output.ok' }),
      action('lost', { needs: ['upper'], input: 'steps.ghost.output', if: 'steps.lost.output' }),
    ];
    expect(definitionProblems({ name: 'reads', steps, output: 'steps.eager.output' }, context)).toEqual([
      { path: 'steps[3].input', message: "step 'eager' input reads steps.upper but does not wait for it: add 'upper' to its needs" },
      { path: 'steps[3].if', message: "step 'eager' if reads steps.last but does not wait for it: add 'last' to its needs" },
      { path: 'steps[4].input', message: "step 'lost' input reads steps.ghost, which is not a step" },
      { path: 'steps[4].if', message: "step 'lost' if reads its own output (steps.lost), which it does not have yet" },
    ]);
  });

  it("does not take a field named steps under another one, or a string, for a step's output", () => {
    const steps = [action('a'), action('b', { input: '{"x": input.steps.a, "y": "steps.a.output"}' })];
    expect(definitionProblems({ name: 'ok', steps }, context)).toEqual([]);
  });

  it('reports the shape first, with indexed paths', () => {
    expect(definitionProblems({ name: 'x', steps: [{ id: 'A' }] }, context)).toEqual([
      expect.objectContaining({ path: 'steps[0].id', message: expect.stringContaining('pattern') }),
    ]);
    expect(definitionProblems({ steps: [] }, context).map((d) => d.path)).toEqual(['', 'steps']);
  });

  it('reports every semantic problem at once', () => {
    const problems = definitionProblems(
      {
        name: 'x',
        steps: [
          action('a', { needs: ['b', 'ghost', 'a'] }),
          action('b', { needs: ['a'], input: 'f(' }),
          { id: 'c', agent: '00000000-0000-4000-8000-000000000002', with: {} },
          { id: 'a', action: 'llm.chat' },
          { id: 'e', action: 'transform.jsonata', with: {} },
        ],
        output: 'g(',
        inputSchema: { type: 'nonsense' },
      },
      context,
    );
    expect(problems.map((p) => p.path)).toEqual([
      'steps[1].input',
      'steps[2].with',
      'steps[2].agent',
      'steps[3].id',
      'steps[3].action',
      'steps[4].with.expression',
      'steps[0].needs[1]',
      'steps[0].needs[2]',
      'steps',
      'output',
      'inputSchema',
    ]);
  });
});

describe('definitionProblems: concurrency', () => {
  const withConcurrency = (concurrency: unknown) => definitionProblems({ name: 'limited', steps: [action('a')], concurrency }, context);

  it('accepts a limit alone, and with a key and each onLimit', () => {
    expect(withConcurrency({ limit: 1 })).toEqual([]);
    for (const onLimit of ['queue', 'cancelNew', 'cancelOldest']) {
      expect(withConcurrency({ limit: 1000, key: 'input.customer', onLimit })).toEqual([]);
    }
  });

  it('refuses a limit out of 1..1000, a missing limit, an unknown onLimit or field, on their paths', () => {
    expect(withConcurrency({ limit: 0 }).map((p) => p.path)).toEqual(['concurrency.limit']);
    expect(withConcurrency({ limit: 1001 }).map((p) => p.path)).toEqual(['concurrency.limit']);
    expect(withConcurrency({ limit: 1.5 }).map((p) => p.path)).toEqual(['concurrency.limit']);
    expect(withConcurrency({ key: 'input.a' }).map((p) => p.path)).toEqual(['concurrency']);
    expect(withConcurrency({ limit: 1, onLimit: 'drop' }).map((p) => p.path)).toEqual(['concurrency.onLimit']);
    expect(withConcurrency({ limit: 1, per: 'x' }).map((p) => p.path)).toEqual(['concurrency.per']);
  });

  it('refuses a key that does not compile, or that reads a step (it is evaluated before any runs)', () => {
    expect(withConcurrency({ limit: 1, key: 'input.(' })).toEqual([
      { path: 'concurrency.key', message: 'concurrency.key: does not compile at position 1' },
    ]);
    expect(withConcurrency({ limit: 1, key: 'steps.a.output' })).toEqual([
      { path: 'concurrency.key', message: 'concurrency.key reads steps.a, but the key is evaluated over the input before any step runs' },
    ]);
  });
});

describe('findCycle', () => {
  it('names the steps along a cycle in run order', () => {
    expect(
      findCycle([
        { id: 'a', needs: ['b'] },
        { id: 'b', needs: ['a'] },
      ]),
    ).toEqual(['a', 'b', 'a']);
    expect(findCycle([{ id: 'x' }, { id: 'a', needs: ['x', 'c'] }, { id: 'b', needs: ['a'] }, { id: 'c', needs: ['b'] }])).toEqual([
      'a',
      'b',
      'c',
      'a',
    ]);
  });

  it('finds none in a diamond', () => {
    expect(findCycle([{ id: 'a' }, { id: 'b', needs: ['a'] }, { id: 'c', needs: ['a'] }, { id: 'd', needs: ['b', 'c'] }])).toBeNull();
  });
});

describe('nextSteps', () => {
  const graph = (steps: Array<{ id: string; needs?: string[] }>, continues: string[] = []): StepGraph => ({
    order: steps.map((s) => s.id),
    needs: new Map(steps.map((s) => [s.id, s.needs ?? []])),
    continues: new Set(continues),
  });
  const diamond = graph([{ id: 'a' }, { id: 'b', needs: ['a'] }, { id: 'c', needs: ['a'] }, { id: 'd', needs: ['b', 'c'] }]);
  const states = (entries: Record<string, StepStatus>) => new Map(Object.entries(entries));
  const none = new Set<string>();

  it('readies the steps whose needs all succeeded', () => {
    expect(nextSteps(diamond, states({ a: 'pending', b: 'pending', c: 'pending', d: 'pending' }), none)).toEqual({
      ready: ['a'],
      skip: [],
    });
    expect(nextSteps(diamond, states({ a: 'succeeded', b: 'pending', c: 'pending', d: 'pending' }), none)).toEqual({
      ready: ['b', 'c'],
      skip: [],
    });
    expect(nextSteps(diamond, states({ a: 'succeeded', b: 'succeeded', c: 'running', d: 'pending' }), none)).toEqual({
      ready: [],
      skip: [],
    });
    expect(nextSteps(diamond, states({ a: 'succeeded', b: 'succeeded', c: 'waiting', d: 'pending' }), none)).toEqual({
      ready: [],
      skip: [],
    });
  });

  it('skips a step with a need that failed, was skipped or canceled, with the reason', () => {
    expect(nextSteps(diamond, states({ a: 'succeeded', b: 'skipped', c: 'succeeded', d: 'pending' }), none)).toEqual({
      ready: [],
      skip: [{ id: 'd', reason: "needs 'b', which was skipped" }],
    });
    expect(nextSteps(diamond, states({ a: 'failed', b: 'pending', c: 'pending', d: 'pending' }), none)).toEqual({
      ready: [],
      skip: [
        { id: 'b', reason: "needs 'a', which failed" },
        { id: 'c', reason: "needs 'a', which failed" },
      ],
    });
  });

  it('runs what needs a step that failed with onError continue', () => {
    const g = graph([{ id: 'a' }, { id: 'b', needs: ['a'] }], ['a']);
    expect(nextSteps(g, states({ a: 'failed', b: 'pending' }), none)).toEqual({ ready: ['b'], skip: [] });
  });

  it('runs a join of a branch taken and one not taken; skips what needs only branches not taken', () => {
    const g = graph([{ id: 'a' }, { id: 'b' }, { id: 'join', needs: ['a', 'b'] }, { id: 'after-b', needs: ['b'] }]);
    const notTaken = new Set(['b']);
    expect(nextSteps(g, states({ a: 'succeeded', b: 'skipped', join: 'pending', 'after-b': 'pending' }), notTaken)).toEqual({
      ready: ['join'],
      skip: [{ id: 'after-b', reason: 'not taken: it needs only steps not taken' }],
    });
  });
});
