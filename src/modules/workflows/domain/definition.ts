import { ErrorDetail } from '../../../shared/errors/domain-error';
import { schemaProblems } from '../../../shared/json-schema/json-schema.validator';

export type JsonObject = Record<string, unknown>;

export interface RetryPolicy {
  maxAttempts: number;
  backoffMs: number;
}

export interface StepDefinition {
  /** Unique in the workflow, `[a-z][a-z0-9_-]*`. */
  id: string;
  /** An agent id of the organization... */
  agent?: string;
  /** ...or a plugin action `<plugin>.<action>`, configured by `with`. */
  action?: string;
  with?: JsonObject;
  /** JSONata over `{ input, steps: { <id>: { output } } }`; the run input when absent. */
  input?: string;
  needs?: string[];
  /** JSONata over the same context; a false value skips the step. */
  if?: string;
  retry?: RetryPolicy;
  timeoutMs?: number;
}

export interface WorkflowDefinition {
  name: string;
  description?: string;
  inputSchema?: JsonObject;
  steps: StepDefinition[];
  /** JSONata over the same context; every step's output by id when absent. */
  output?: string;
  /** The whole run's bound. */
  timeoutMs?: number;
}

export const WORKFLOW_LIMITS = {
  steps: 100,
  definitionBytes: 256 * 1024,
  runTimeoutMs: { min: 1000, max: 24 * 3600 * 1000, default: 3600 * 1000 },
  stepTimeoutMs: { min: 100, max: 3600 * 1000 },
  retryAttempts: 10,
  backoffMs: 600_000,
} as const;

const STEP_ID = '^[a-z][a-z0-9_-]{0,62}$';

/** The shape; what the graph and the organization must satisfy is checked after. */
const DEFINITION_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'steps'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    description: { type: 'string', maxLength: 2000 },
    inputSchema: { type: 'object' },
    output: { type: 'string', minLength: 1, maxLength: 10000 },
    timeoutMs: { type: 'integer', minimum: WORKFLOW_LIMITS.runTimeoutMs.min, maximum: WORKFLOW_LIMITS.runTimeoutMs.max },
    steps: {
      type: 'array',
      minItems: 1,
      maxItems: WORKFLOW_LIMITS.steps,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id'],
        properties: {
          id: { type: 'string', pattern: STEP_ID },
          agent: { type: 'string', format: 'uuid' },
          action: { type: 'string', pattern: '^[a-z][a-z0-9-]*\\.[a-zA-Z][a-zA-Z0-9_-]*$' },
          with: { type: 'object' },
          input: { type: 'string', minLength: 1, maxLength: 10000 },
          needs: { type: 'array', maxItems: WORKFLOW_LIMITS.steps, items: { type: 'string' } },
          if: { type: 'string', minLength: 1, maxLength: 10000 },
          retry: {
            type: 'object',
            additionalProperties: false,
            required: ['maxAttempts'],
            properties: {
              maxAttempts: { type: 'integer', minimum: 1, maximum: WORKFLOW_LIMITS.retryAttempts },
              backoffMs: { type: 'integer', minimum: 0, maximum: WORKFLOW_LIMITS.backoffMs },
            },
          },
          timeoutMs: { type: 'integer', minimum: WORKFLOW_LIMITS.stepTimeoutMs.min, maximum: WORKFLOW_LIMITS.stepTimeoutMs.max },
        },
      },
    },
  },
};

/** What a definition is checked against beyond its own shape: the organization and the catalog. */
export interface DefinitionContext {
  /** The agent exists in the caller's organization. */
  agentExists(id: string): boolean;
  /** `ok`, or why the action cannot be used. */
  action(qualified: string): 'ok' | 'plugin-not-installed' | 'unknown';
  /** Problems of an action's `with` (paths relative to it). */
  actionConfigProblems(qualified: string, config: JsonObject): ErrorDetail[];
  /** Null when the JSONata expression compiles; else why (with the position when known). */
  compileProblem(expression: string): string | null;
  /** The step ids the expression reads (`steps.<id>`). */
  stepsRead(expression: string): string[];
  /** Null when the JSON Schema compiles; else why. */
  /** Why a tenant's JSON Schema cannot be stored, with paths under `root`. */
  schemaProblems(schema: JsonObject, root: string): Array<{ path: string; message: string }>;
}

/**
 * Checks a whole definition and answers every problem at once, as envelope details: the shape,
 * then duplicate ids, unknown or self needs, cycles (named `a -> b -> a`), agents, actions,
 * `with` configs and every expression. An empty list means it may be saved.
 */
export function definitionProblems(definition: unknown, context: DefinitionContext): ErrorDetail[] {
  const size = Buffer.byteLength(JSON.stringify(definition ?? null));
  if (size > WORKFLOW_LIMITS.definitionBytes) {
    return [{ path: '', message: `the definition is ${size} bytes; at most ${WORKFLOW_LIMITS.definitionBytes} are allowed` }];
  }
  const shape = schemaProblems(DEFINITION_SCHEMA, definition, 'definition').map((d) => ({
    ...d,
    path: d.path.replace(/^definition\.?/, '').replace(/\.(\d+)(?=\.|$)/g, '[$1]'),
    message: d.message.replace(/^definition\.?/, '').replace(/\.(\d+)(?=[. ]|$)/g, '[$1]'),
  }));
  if (shape.length) return shape;

  const def = definition as WorkflowDefinition;
  const problems: ErrorDetail[] = [];
  const add = (path: string, message: string) => problems.push({ path, message });
  const ids = new Map<string, number>();

  def.steps.forEach((step, i) => {
    const at = `steps[${i}]`;
    if (ids.has(step.id)) add(`${at}.id`, `step id '${step.id}' is used twice (also steps[${ids.get(step.id)}])`);
    else ids.set(step.id, i);
    if (step.agent === undefined && step.action === undefined)
      add(at, `step '${step.id}' needs exactly one of agent or action; it has neither`);
    if (step.agent !== undefined && step.action !== undefined)
      add(at, `step '${step.id}' needs exactly one of agent or action; it has both`);
    if (step.with !== undefined && step.action === undefined)
      add(`${at}.with`, `step '${step.id}': with configures an action; this step has none`);
    if (step.agent !== undefined && !context.agentExists(step.agent))
      add(`${at}.agent`, `step '${step.id}': no agent ${step.agent} in this organization`);
    if (step.action !== undefined) {
      const action = context.action(step.action);
      if (action === 'plugin-not-installed')
        add(`${at}.action`, `step '${step.id}': plugin '${step.action.split('.', 1)[0]}' is not installed`);
      else if (action === 'unknown') add(`${at}.action`, `step '${step.id}': no action '${step.action}' in the catalog`);
      else {
        for (const p of context.actionConfigProblems(step.action, step.with ?? {}))
          add(`${at}.with${p.path ? `.${p.path}` : ''}`, `step '${step.id}': ${p.message}`);
      }
    }
    for (const field of ['input', 'if'] as const) {
      const expression = step[field];
      const problem = expression === undefined ? null : context.compileProblem(expression);
      if (problem) add(`${at}.${field}`, `step '${step.id}' ${field}: ${problem}`);
    }
  });

  def.steps.forEach((step, i) => {
    (step.needs ?? []).forEach((need, j) => {
      if (need === step.id) add(`steps[${i}].needs[${j}]`, `step '${step.id}' needs itself`);
      else if (!ids.has(need)) add(`steps[${i}].needs[${j}]`, `step '${step.id}' needs '${need}', which is not a step`);
    });
  });
  const cycle = findCycle(def.steps);
  if (cycle) add('steps', `the steps form a cycle: ${cycle.join(' -> ')}`);
  else problems.push(...unwaitedReads(def.steps, context));

  if (def.output !== undefined) {
    const problem = context.compileProblem(def.output);
    if (problem) add('output', `output: ${problem}`);
  }
  if (def.inputSchema) {
    for (const p of context.schemaProblems(def.inputSchema, 'inputSchema')) add(p.path, p.message);
  }
  return problems;
}

/**
 * A step's `input` and `if` may read the output of a step it waits for (through `needs`, directly
 * or further up); any other step may not have run yet when they are evaluated, and the run would
 * go on with nothing where its output should be.
 */
function unwaitedReads(steps: StepDefinition[], context: DefinitionContext): ErrorDetail[] {
  const byId = new Map(steps.map((step) => [step.id, step]));
  const upstream = new Map<string, Set<string>>();
  const waitsFor = (id: string): Set<string> => {
    let found = upstream.get(id);
    if (found) return found;
    found = new Set();
    upstream.set(id, found);
    for (const need of byId.get(id)?.needs ?? []) {
      found.add(need);
      for (const further of waitsFor(need)) found.add(further);
    }
    return found;
  };
  const problems: ErrorDetail[] = [];
  steps.forEach((step, i) => {
    for (const field of ['input', 'if'] as const) {
      const expression = step[field];
      if (expression === undefined) continue;
      for (const read of context.stepsRead(expression)) {
        if (waitsFor(step.id).has(read)) continue;
        const message = !byId.has(read)
          ? `step '${step.id}' ${field} reads steps.${read}, which is not a step`
          : read === step.id
            ? `step '${step.id}' ${field} reads its own output (steps.${read}), which it does not have yet`
            : `step '${step.id}' ${field} reads steps.${read} but does not wait for it: add '${read}' to its needs`;
        problems.push({ path: `steps[${i}].${field}`, message });
      }
    }
  });
  return problems;
}

/** A cycle through `needs` as the ids along it (`['a', 'b', 'a']`), or null. Self-needs are reported apart. */
export function findCycle(steps: Array<Pick<StepDefinition, 'id' | 'needs'>>): string[] | null {
  // A duplicate id is reported apart; the first step with an id stands for it here.
  const needs = new Map<string, string[]>();
  for (const s of steps)
    if (!needs.has(s.id))
      needs.set(
        s.id,
        (s.needs ?? []).filter((n) => n !== s.id),
      );
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | null => {
    if (state.get(id) === 'done' || !needs.has(id)) return null;
    if (state.get(id) === 'open') return [...path.slice(path.indexOf(id)), id];
    state.set(id, 'open');
    path.push(id);
    for (const next of needs.get(id)!) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(id, 'done');
    return null;
  };
  for (const step of steps) {
    const cycle = visit(step.id);
    if (cycle) return cycle.reverse();
  }
  return null;
}
