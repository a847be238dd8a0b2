import { ErrorDetail } from '../../../shared/errors/domain-error';
import { schemaProblems } from '../../../shared/json-schema/json-schema.validator';
import { MCP_EXPOSURE_SCHEMA, McpExposure } from '../../../shared/mcp/mcp-exposure';

export type JsonObject = Record<string, unknown>;

export interface RetryPolicy {
  maxAttempts: number;
  /** The wait after the first failed attempt (1000 when absent). */
  backoffMs?: number;
  /** `exponential` (the default) doubles the wait after each attempt; `fixed` keeps it. */
  backoff?: 'fixed' | 'exponential';
  /** The longest wait between attempts. */
  maxBackoffMs?: number;
  /** Error codes that are tried again; when absent, the ones that may pass on another try (timeouts, upstream errors). */
  retryOn?: string[];
}

/** Who may answer an approval: anyone with one of `roles`, or one of `users` (ids or emails). */
export interface Approvers {
  roles?: Array<'admin' | 'member'>;
  users?: string[];
}

export interface WaitDefinition {
  /** `approval`: answered through the API by an approver; `event`: by `POST /api/events` with `event` and the `key`. */
  for: 'approval' | 'event';
  /** The event's name, for `event`. */
  event?: string;
  /** JSONata over the step's context giving the correlation key, for `event` (none: any key). */
  key?: string;
  /** JSON Schema the answer's data must match. */
  schema?: JsonObject;
  /** How long to wait; the run's own timeout bounds it too. */
  timeoutSeconds?: number;
  /** `fail` (the default) fails the step with WAIT_TIMEOUT; `continue` succeeds with `{ data: null, timedOut: true }`. */
  onTimeout?: 'fail' | 'continue';
  /** For `approval`: who may answer (admins and members when absent). */
  approvers?: Approvers;
  /** For `approval`: whether whoever started the run may answer it (true when absent). */
  selfApproval?: boolean;
}

export interface StepDefinition {
  /** Unique in the workflow, `[a-z][a-z0-9_-]*`. */
  id: string;
  /** An agent id of the organization... */
  agent?: string;
  /** ...or a plugin action `<plugin>.<action>`, configured by `with`... */
  action?: string;
  with?: JsonObject;
  /** ...or a durable wait... */
  sleep?: { seconds?: number; until?: string };
  /** ...or a branch: the first case that holds runs its steps, the others' are skipped... */
  switch?: { cases: Array<{ when: string; steps: string[] }>; default?: string[] };
  /** ...or a run of another workflow, as a child (waited for unless `detach` is true)... */
  workflow?: string;
  detach?: boolean;
  /** ...or a wait for a person's answer or a system's event... */
  wait?: WaitDefinition;
  /** ...or a step run for each item of an array, `concurrency` at a time. */
  map?: { over: string; step: Omit<StepDefinition, 'id'> & { id?: string }; concurrency?: number; skipFailures?: boolean };
  /** JSONata over `{ input, steps: { <id>: { output, error } } }`; the run input when absent. */
  input?: string;
  needs?: string[];
  /** JSONata over the same context; a false value skips the step. */
  if?: string;
  retry?: RetryPolicy;
  timeoutMs?: number;
  /** `fail` (the default) fails the run; `continue` records the failure and goes on (later steps see `steps.<id>.error`). */
  onError?: 'fail' | 'continue';
}

/**
 * At most `limit` runs of the workflow with the same key in progress (`running` or `waiting`) at
 * once; `onLimit` says what becomes of a run beyond it.
 */
export interface ConcurrencyPolicy {
  limit: number;
  /** JSONata over `{ input }`; its result, as a string, is the run's key. Every run shares one key ('') when absent. */
  key?: string;
  /** `queue` (the default): waits, `queued`, for a place (oldest first); `cancelNew`: is canceled; `cancelOldest`: cancels the oldest in progress. */
  onLimit?: 'queue' | 'cancelNew' | 'cancelOldest';
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
  /** A step run once when the run fails, with `error` in its context. */
  onFailure?: StepDefinition;
  concurrency?: ConcurrencyPolicy;
  /** Served as a tool by `/api/mcp` when `expose` is true. */
  mcp?: McpExposure;
}

export const WORKFLOW_LIMITS = {
  steps: 100,
  definitionBytes: 256 * 1024,
  runTimeoutMs: { min: 1000, max: 24 * 3600 * 1000, default: 3600 * 1000 },
  stepTimeoutMs: { min: 100, max: 3600 * 1000 },
  retryAttempts: 10,
  backoffMs: 600_000,
  maxBackoffMs: 3600 * 1000,
  sleepSeconds: 24 * 3600,
  switchCases: 50,
  mapItems: 10_000,
  mapConcurrency: 100,
  waitSeconds: 24 * 3600,
  approverUsers: 100,
  concurrencyLimit: 1000,
  /** Characters of a run's concurrency key. */
  concurrencyKey: 200,
} as const;

export const STEP_ID = '^[a-z][a-z0-9_-]{0,62}$';
const EXPRESSION = { type: 'string', minLength: 1, maxLength: 10000 };

/**
 * One kind of step as a definition sees it: the field that names it, that field's JSON Schema,
 * and what is checked at save beyond the shape. The kinds live with their `run()` in
 * application/steps; a definition is checked against the ones the service has.
 */
export interface StepKindRules {
  /** The step field that makes a step of this kind (`agent`, `action`, `sleep`, ...). */
  readonly key: string;
  readonly schema: JsonObject;
  /** Other step fields only this kind takes (an action's `with`), with their schemas. */
  readonly fields?: Record<string, JsonObject>;
  /** Whether `retry` and `timeoutMs` apply (a step that calls out). */
  readonly callsOut: boolean;
  /** Problems of the step beyond its shape, with paths under `at`. */
  problems(step: StepDefinition, at: string, context: DefinitionContext, workflow: WorkflowDefinition): ErrorDetail[];
  /** Its expressions besides `input` and `if`, by path under the step (compiled at save, their step reads checked). */
  expressions?(step: StepDefinition): Array<{ path: string; expression: string }>;
  /** Steps whose running it decides (a switch's branches): they wait for it. */
  decides?(step: StepDefinition): string[];
}

function definitionSchema(kinds: readonly StepKindRules[]): JsonObject {
  const step = {
    type: 'object',
    additionalProperties: false,
    required: ['id'],
    properties: {
      id: { type: 'string', pattern: STEP_ID },
      ...Object.fromEntries(kinds.flatMap((k) => [[k.key, k.schema], ...Object.entries(k.fields ?? {})])),
      input: EXPRESSION,
      needs: { type: 'array', maxItems: WORKFLOW_LIMITS.steps, items: { type: 'string' } },
      if: EXPRESSION,
      retry: {
        type: 'object',
        additionalProperties: false,
        required: ['maxAttempts'],
        properties: {
          maxAttempts: { type: 'integer', minimum: 1, maximum: WORKFLOW_LIMITS.retryAttempts },
          backoffMs: { type: 'integer', minimum: 0, maximum: WORKFLOW_LIMITS.backoffMs },
          backoff: { enum: ['fixed', 'exponential'] },
          maxBackoffMs: { type: 'integer', minimum: 0, maximum: WORKFLOW_LIMITS.maxBackoffMs },
          retryOn: { type: 'array', maxItems: 50, items: { type: 'string', pattern: '^[A-Z][A-Z0-9_]{0,63}$' } },
        },
      },
      timeoutMs: { type: 'integer', minimum: WORKFLOW_LIMITS.stepTimeoutMs.min, maximum: WORKFLOW_LIMITS.stepTimeoutMs.max },
      onError: { enum: ['fail', 'continue'] },
    },
  };
  return {
    type: 'object',
    additionalProperties: false,
    required: ['name', 'steps'],
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 200 },
      description: { type: 'string', maxLength: 2000 },
      inputSchema: { type: 'object' },
      output: EXPRESSION,
      timeoutMs: { type: 'integer', minimum: WORKFLOW_LIMITS.runTimeoutMs.min, maximum: WORKFLOW_LIMITS.runTimeoutMs.max },
      steps: { type: 'array', minItems: 1, maxItems: WORKFLOW_LIMITS.steps, items: step },
      onFailure: step,
      mcp: MCP_EXPOSURE_SCHEMA,
      concurrency: {
        type: 'object',
        additionalProperties: false,
        required: ['limit'],
        properties: {
          limit: { type: 'integer', minimum: 1, maximum: WORKFLOW_LIMITS.concurrencyLimit },
          key: EXPRESSION,
          onLimit: { enum: ['queue', 'cancelNew', 'cancelOldest'] },
        },
      },
    },
  };
}

const schemas = new WeakMap<readonly StepKindRules[], JsonObject>();

/** The JSON Schema of a definition's shape with these step kinds (built once per set of kinds). */
export function workflowDefinitionSchema(kinds: readonly StepKindRules[]): JsonObject {
  let schema = schemas.get(kinds);
  if (!schema) schemas.set(kinds, (schema = definitionSchema(kinds)));
  return schema;
}

/** What a definition is checked against beyond its own shape: the organization, the catalog, the step kinds. */
export interface DefinitionContext {
  /** The step kinds the service runs. */
  kinds: readonly StepKindRules[];
  /** The agent exists in the caller's organization. */
  agentExists(id: string): boolean;
  /** The workflow exists in the caller's organization. */
  workflowExists(id: string): boolean;
  /** `ok`, or why the action cannot be used. */
  action(qualified: string): 'ok' | 'plugin-not-installed' | 'unknown';
  /** Problems of an action's `with` (paths relative to it). */
  actionConfigProblems(qualified: string, config: JsonObject): ErrorDetail[];
  /** Null when the JSONata expression compiles; else why (with the position when known). */
  compileProblem(expression: string): string | null;
  /** The step ids the expression reads (`steps.<id>`). */
  stepsRead(expression: string): string[];
  /** Why a tenant's JSON Schema cannot be stored, with paths under `root`. */
  schemaProblems(schema: JsonObject, root: string): Array<{ path: string; message: string }>;
}

/** A problem when a wait of `seconds` (a sleep, a wait's timeout) could not end before the run's `timeoutMs`: the run would time out first. */
export function outlivesRun(seconds: number, path: string, step: StepDefinition, workflow: WorkflowDefinition): ErrorDetail[] {
  const timeoutMs = workflow.timeoutMs ?? WORKFLOW_LIMITS.runTimeoutMs.default;
  if (seconds * 1000 < timeoutMs) return [];
  return [{ path, message: `step '${step.id}' waits ${seconds} s, past the run's timeoutMs (${timeoutMs}): the run would time out first` }];
}

/** The steps a run of the definition records: its steps, then its `onFailure` when it has one. */
export function recordedSteps(definition: WorkflowDefinition): StepDefinition[] {
  return definition.onFailure ? [...definition.steps, definition.onFailure] : definition.steps;
}

/** The kind of a step (the one kind field it has), or null when it has none or several. */
export function kindOf(step: StepDefinition, kinds: readonly StepKindRules[]): StepKindRules | null {
  const found = kinds.filter((k) => (step as unknown as JsonObject)[k.key] !== undefined);
  return found.length === 1 ? found[0] : null;
}

/**
 * Each step's needs with the steps that decide on it (a switch whose branch it is): what it
 * waits for before it may run.
 */
export function effectiveNeeds(steps: StepDefinition[], kinds: readonly StepKindRules[]): Map<string, string[]> {
  // A duplicate id is reported apart; the first step with an id stands for it here.
  const needs = new Map<string, string[]>();
  for (const s of steps) if (!needs.has(s.id)) needs.set(s.id, [...(s.needs ?? [])]);
  for (const step of steps) {
    for (const decided of kindOf(step, kinds)?.decides?.(step) ?? []) {
      const list = needs.get(decided);
      if (list && decided !== step.id && !list.includes(step.id)) list.push(step.id);
    }
  }
  return needs;
}

/**
 * Checks a whole definition and answers every problem at once, as envelope details: the shape,
 * then duplicate ids, unknown or self needs, cycles (named `a -> b -> a`), each step's kind and
 * its own checks (agents, actions, `with` configs, sleeps, switches), every expression and
 * what it reads. An empty list means it may be saved.
 */
export function definitionProblems(definition: unknown, context: DefinitionContext): ErrorDetail[] {
  const size = Buffer.byteLength(JSON.stringify(definition ?? null));
  if (size > WORKFLOW_LIMITS.definitionBytes) {
    return [{ path: '', message: `the definition is ${size} bytes; at most ${WORKFLOW_LIMITS.definitionBytes} are allowed` }];
  }
  const shape = schemaProblems(workflowDefinitionSchema(context.kinds), definition, 'definition').map((d) => ({
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
    problems.push(...stepProblems(step, at, context, def));
  });

  def.steps.forEach((step, i) => {
    (step.needs ?? []).forEach((need, j) => {
      if (need === step.id) add(`steps[${i}].needs[${j}]`, `step '${step.id}' needs itself`);
      else if (!ids.has(need)) add(`steps[${i}].needs[${j}]`, `step '${step.id}' needs '${need}', which is not a step`);
    });
  });
  problems.push(...branchProblems(def.steps, ids, context.kinds));
  const needs = effectiveNeeds(def.steps, context.kinds);
  const cycle = findCycle(def.steps.map((s) => ({ id: s.id, needs: needs.get(s.id) })));
  if (cycle) add('steps', `the steps form a cycle: ${cycle.join(' -> ')}`);
  else problems.push(...unwaitedReads(def.steps, needs, context));

  if (def.output !== undefined) {
    const problem = context.compileProblem(def.output);
    if (problem) add('output', `output: ${problem}`);
  }
  if (def.inputSchema) {
    for (const p of context.schemaProblems(def.inputSchema, 'inputSchema')) add(p.path, p.message);
  }
  if (def.onFailure) problems.push(...onFailureProblems(def, ids, context));
  if (def.concurrency?.key !== undefined) problems.push(...concurrencyKeyProblems(def.concurrency.key, context));
  return problems;
}

/** The key is evaluated as the run is started, before any step ran: it compiles and reads no step. */
function concurrencyKeyProblems(key: string, context: DefinitionContext): ErrorDetail[] {
  const problem = context.compileProblem(key);
  if (problem) return [{ path: 'concurrency.key', message: `concurrency.key: ${problem}` }];
  return context.stepsRead(key).map((read) => ({
    path: 'concurrency.key',
    message: `concurrency.key reads steps.${read}, but the key is evaluated over the input before any step runs`,
  }));
}

/**
 * A step inside another (a map's): its shape as a step's (its id may be left out), then the
 * checks of `stepProblems`; it has no needs, if or onError of its own, and `inner` names the
 * kinds it may be.
 */
export function innerStepProblems(
  step: unknown,
  at: string,
  context: DefinitionContext,
  workflow: WorkflowDefinition,
  inner: { id: string; kinds: string[] },
): ErrorDetail[] {
  const stepSchema = (workflowDefinitionSchema(context.kinds).properties as { onFailure: JsonObject }).onFailure;
  const candidate = { id: inner.id, ...(step as JsonObject) };
  const shape = schemaProblems(stepSchema, candidate, at).map((d) => ({
    ...d,
    path: d.path.replace(/\.(\d+)(?=\.|$)/g, '[$1]'),
    message: d.message.replace(/\.(\d+)(?=[. ]|$)/g, '[$1]'),
  }));
  if (shape.length) return shape;
  const checked = candidate as unknown as StepDefinition;
  const problems = stepProblems(checked, at, context, workflow);
  const kind = kindOf(checked, context.kinds);
  if (kind && !inner.kinds.includes(kind.key))
    problems.push({ path: at, message: `${at} may be ${inner.kinds.join(', ')}; '${kind.key}' cannot be one` });
  for (const field of ['needs', 'if', 'onError'] as const) {
    if (checked[field] !== undefined) problems.push({ path: `${at}.${field}`, message: `${at} takes no ${field}` });
  }
  return problems;
}

/** One step on its own: its kind, the fields that do not apply to it, the kind's checks, its expressions. */
function stepProblems(step: StepDefinition, at: string, context: DefinitionContext, workflow: WorkflowDefinition): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const add = (path: string, message: string) => problems.push({ path, message });
  const { kinds } = context;
  const keys = kinds.filter((k) => (step as unknown as JsonObject)[k.key] !== undefined).map((k) => k.key);
  if (keys.length !== 1) {
    const all = kinds.map((k) => k.key);
    const allowed = `${all.slice(0, -1).join(', ')} or ${all[all.length - 1]}`;
    add(at, `step '${step.id}' needs exactly one of ${allowed}; it has ${keys.length ? keys.join(' and ') : 'none'}`);
  }
  const kind = kindOf(step, kinds);
  for (const other of kinds) {
    for (const field of Object.keys(other.fields ?? {})) {
      if ((step as unknown as JsonObject)[field] !== undefined && kind !== other)
        add(`${at}.${field}`, `step '${step.id}': ${field} configures ${article(other.key)} ${other.key} step; this step is not one`);
    }
  }
  if (kind && !kind.callsOut) {
    for (const field of ['retry', 'timeoutMs'] as const) {
      if (step[field] !== undefined) add(`${at}.${field}`, `step '${step.id}': ${field} applies to steps that call out (agent, action)`);
    }
  }
  const { retry } = step;
  if (retry?.maxBackoffMs !== undefined && retry.backoffMs !== undefined && retry.maxBackoffMs < retry.backoffMs)
    add(`${at}.retry.maxBackoffMs`, `step '${step.id}': maxBackoffMs (${retry.maxBackoffMs}) is less than backoffMs (${retry.backoffMs})`);
  if (kind) problems.push(...kind.problems(step, at, context, workflow));
  for (const { path, expression } of expressionsOf(step, kind)) {
    const problem = context.compileProblem(expression);
    if (problem) add(`${at}.${path}`, `step '${step.id}' ${path}: ${problem}`);
  }
  return problems;
}

/** A step's expressions by path: `input`, `if` and its kind's own. */
function expressionsOf(step: StepDefinition, kind: StepKindRules | null): Array<{ path: string; expression: string }> {
  return [
    ...(['input', 'if'] as const).flatMap((field) => (step[field] === undefined ? [] : [{ path: field, expression: step[field] }])),
    ...(kind?.expressions?.(step) ?? []),
  ];
}

/** The steps a switch decides on: steps of the workflow, none of them the switch, none decided twice. */
function branchProblems(steps: StepDefinition[], ids: Map<string, number>, kinds: readonly StepKindRules[]): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const decider = new Map<string, string>();
  steps.forEach((step, i) => {
    for (const decided of new Set(kindOf(step, kinds)?.decides?.(step) ?? [])) {
      const at = `steps[${i}].${kindOf(step, kinds)!.key}`;
      if (decided === step.id) problems.push({ path: at, message: `step '${step.id}' lists itself as one of its branches` });
      else if (!ids.has(decided)) problems.push({ path: at, message: `step '${step.id}' lists '${decided}', which is not a step` });
      else if (decider.has(decided))
        problems.push({ path: at, message: `step '${decided}' is a branch of both '${decider.get(decided)}' and '${step.id}'` });
      else decider.set(decided, step.id);
    }
  });
  return problems;
}

/** The workflow's `onFailure`: a step that calls out, on its own (no needs or if), with an id no step has. */
function onFailureProblems(workflow: WorkflowDefinition, ids: Map<string, number>, context: DefinitionContext): ErrorDetail[] {
  const step = workflow.onFailure!;
  const problems = stepProblems(step, 'onFailure', context, workflow);
  const add = (path: string, message: string) => problems.push({ path, message });
  if (ids.has(step.id)) add('onFailure.id', `onFailure's id '${step.id}' is also a step's (steps[${ids.get(step.id)}])`);
  const kind = kindOf(step, context.kinds);
  if (kind && !kind.callsOut) add('onFailure', `onFailure runs an agent or an action; '${kind.key}' cannot be one`);
  for (const field of ['needs', 'if', 'onError'] as const) {
    if (step[field] !== undefined) add(`onFailure.${field}`, `onFailure runs once when the run fails; it takes no ${field}`);
  }
  return problems;
}

/**
 * A step's expressions may read the output of a step it waits for (through `needs`, or the
 * switch it is a branch of, directly or further up); any other step may not have run yet when
 * they are evaluated, and the run would go on with nothing where its output should be.
 */
function unwaitedReads(steps: StepDefinition[], needs: Map<string, string[]>, context: DefinitionContext): ErrorDetail[] {
  const byId = new Map(steps.map((step) => [step.id, step]));
  const upstream = new Map<string, Set<string>>();
  const waitsFor = (id: string): Set<string> => {
    let found = upstream.get(id);
    if (found) return found;
    found = new Set();
    upstream.set(id, found);
    for (const need of needs.get(id) ?? []) {
      found.add(need);
      for (const further of waitsFor(need)) found.add(further);
    }
    return found;
  };
  const problems: ErrorDetail[] = [];
  steps.forEach((step, i) => {
    for (const { path, expression } of expressionsOf(step, kindOf(step, context.kinds))) {
      for (const read of context.stepsRead(expression)) {
        if (waitsFor(step.id).has(read)) continue;
        const message = !byId.has(read)
          ? `step '${step.id}' ${path} reads steps.${read}, which is not a step`
          : read === step.id
            ? `step '${step.id}' ${path} reads its own output (steps.${read}), which it does not have yet`
            : `step '${step.id}' ${path} reads steps.${read} but does not wait for it: add '${read}' to its needs`;
        problems.push({ path: `steps[${i}].${path}`, message });
      }
    }
  });
  return problems;
}

function article(word: string): string {
  return /^[aeiou]/.test(word) ? 'an' : 'a';
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
