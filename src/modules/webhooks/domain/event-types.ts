import { AUDIT_ACTIONS } from '../../../shared/audit/audit-trail';
/** What a receiver may subscribe to: each event type, what it means, the schema of its `data` and an example. */
export interface EventType {
  type: string;
  description: string;
  schema: Record<string, unknown>;
  example: Record<string, unknown>;
}

const failure = {
  type: ['object', 'null'],
  properties: { code: { type: 'string' }, message: { type: 'string' } },
  required: ['code', 'message'],
};
const timestamps = {
  createdAt: { type: 'string', format: 'date-time' },
  startedAt: { type: ['string', 'null'], format: 'date-time' },
  finishedAt: { type: ['string', 'null'], format: 'date-time' },
  durationMs: { type: ['integer', 'null'] },
};
/** Outputs past 64 KiB are left out: `outputTruncated` is then true and `links.self` has the whole resource. */
const output = {
  output: { description: 'Any JSON; null when truncated' },
  outputTruncated: { type: 'boolean' },
  links: { type: 'object', properties: { self: { type: 'string' } }, required: ['self'] },
};

/** What a retry links: the record it retries, and the one that retries it (set later, so null in events of its end). */
const retries = {
  retryOf: { type: ['string', 'null'], format: 'uuid' },
  retriedBy: { type: ['string', 'null'], format: 'uuid' },
};

const execution = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    agentId: { type: 'string', format: 'uuid' },
    status: { enum: ['succeeded', 'failed', 'timed_out', 'canceled'] },
    input: {},
    error: failure,
    attempts: { type: 'integer' },
    triggeredBy: { type: 'object' },
    ...retries,
    ...timestamps,
    ...output,
  },
  required: ['id', 'agentId', 'status', 'error', 'links'],
};
const run = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    workflowId: { type: 'string', format: 'uuid' },
    workflowVersion: { type: 'integer' },
    status: { enum: ['waiting', 'succeeded', 'failed', 'timed_out', 'canceled'] },
    input: {},
    error: failure,
    triggeredBy: { type: 'object' },
    ...retries,
    ...timestamps,
    ...output,
  },
  required: ['id', 'workflowId', 'status', 'error', 'links'],
};
const plugin = {
  type: 'object',
  properties: { slug: { type: 'string' }, version: { type: 'string' } },
  required: ['slug'],
};

const at = '2026-01-01T12:00:00.000Z';
const ids = { agent: '3f0c2a4e-8c1d-4b7e-9a51-0f6b2d1e7c11', execution: 'a9e1d2c3-4b5a-4c6d-8e7f-901a2b3c4d5e' };

function finished(noun: 'execution' | 'run', status: string): Pick<EventType, 'description'> {
  const what = noun === 'execution' ? 'An agent execution' : 'A workflow run';
  return { description: `${what} ended ${status.replace('_', ' ')}` };
}

const STATUSES = ['succeeded', 'failed', 'timed_out', 'canceled'] as const;

export const EVENT_TYPES: readonly EventType[] = [
  {
    type: 'plugin.installed',
    description: 'A plugin was installed in the organization',
    schema: plugin,
    example: { slug: 'http', version: '1.0.0' },
  },
  { type: 'plugin.uninstalled', description: 'A plugin was uninstalled', schema: plugin, example: { slug: 'http' } },
  ...STATUSES.map((status) => ({
    type: `agent.execution.${status}`,
    ...finished('execution', status),
    schema: execution,
    example: {
      id: ids.execution,
      agentId: ids.agent,
      status,
      input: { text: 'hi' },
      output: status === 'succeeded' ? 'HI' : null,
      outputTruncated: false,
      error: status === 'succeeded' ? null : { code: status === 'canceled' ? 'CANCELED' : 'UPSTREAM_ERROR', message: '...' },
      attempts: 1,
      triggeredBy: { type: 'user', id: 'b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d5e' },
      retryOf: null,
      retriedBy: null,
      createdAt: at,
      startedAt: at,
      finishedAt: at,
      durationMs: 2,
      links: { self: `/api/agents/${ids.agent}/history/${ids.execution}` },
    },
  })),
  ...(['waiting', ...STATUSES] as const).map((status) => ({
    type: `workflow.run.${status}`,
    ...(status === 'waiting'
      ? { description: 'A workflow run let go of its worker until a step goes on (a sleep, the backoff before a retry)' }
      : finished('run', status)),
    schema: run,
    example: {
      id: ids.execution,
      workflowId: ids.agent,
      workflowVersion: 1,
      status,
      input: { n: 5 },
      output: status === 'succeeded' ? { n: 13 } : null,
      outputTruncated: false,
      error: status === 'succeeded' || status === 'waiting' ? null : { code: 'STEP_FAILED', message: '...' },
      triggeredBy: { type: 'user', id: 'b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d5e' },
      retryOf: null,
      retriedBy: null,
      createdAt: at,
      startedAt: at,
      finishedAt: status === 'waiting' ? null : at,
      durationMs: status === 'waiting' ? null : 30,
      links: { self: `/api/workflows/${ids.agent}/runs/${ids.execution}` },
    },
  })),
  ...(['skipped', 'missed'] as const).map((outcome) => ({
    type: `workflow.schedule.${outcome}`,
    description:
      outcome === 'skipped'
        ? "A schedule's occurrence started no run: the schedule's previous run was still going (overlap: skip)"
        : "A schedule's occurrence passed while no worker ran, and its catch-up does not run it",
    schema: {
      type: 'object',
      properties: {
        scheduleId: { type: 'string', format: 'uuid' },
        workflowId: { type: 'string', format: 'uuid' },
        scheduledFor: { type: 'string', format: 'date-time' },
      },
      required: ['scheduleId', 'workflowId', 'scheduledFor'],
    },
    example: { scheduleId: ids.execution, workflowId: ids.agent, scheduledFor: at },
  })),
  {
    type: 'webhook.endpoint.disabled',
    description: 'Another endpoint of the organization was disabled (it answered 410, or failed for days)',
    schema: {
      type: 'object',
      properties: { endpointId: { type: 'string', format: 'uuid' }, url: { type: 'string' }, reason: { type: 'string' } },
      required: ['endpointId', 'url', 'reason'],
    },
    example: { endpointId: ids.agent, url: 'https://hooks.example.com/platform', reason: 'The receiver answered 410 Gone' },
  },
  {
    type: 'webhook.test',
    description: 'Sent on request (POST /api/webhooks/:id/test) to check an endpoint',
    schema: { type: 'object', properties: { endpointId: { type: 'string', format: 'uuid' } }, required: ['endpointId'] },
    example: { endpointId: ids.agent },
  },
  ...auditEventTypes(),
];

/**
 * `audit.<action>` for each action of the audit log (enterprise): each event once sealed, with
 * its place in the chain and its hash, within seconds of the change. `*` does not include them.
 */
function auditEventTypes(): EventType[] {
  const actor = {
    type: 'object',
    properties: {
      type: { enum: ['user', 'service_account', 'api_key', 'system', 'anonymous'] },
      id: { type: ['string', 'null'] },
      name: { type: ['string', 'null'] },
      ip: { type: ['string', 'null'] },
      userAgent: { type: ['string', 'null'] },
      via: { enum: ['password', 'saml', 'oidc', 'key', null] },
    },
    required: ['type', 'id', 'name'],
  };
  const schema = {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      occurredAt: { type: 'string', format: 'date-time' },
      actor,
      action: { type: 'string' },
      target: {
        type: ['object', 'null'],
        properties: { type: { type: 'string' }, id: { type: ['string', 'null'] }, name: { type: ['string', 'null'] } },
      },
      outcome: { enum: ['success', 'failure', 'denied'] },
      requestId: { type: ['string', 'null'] },
      changes: { type: ['object', 'null'] },
      sequence: { type: 'integer' },
      hash: { type: 'string' },
    },
    required: ['id', 'occurredAt', 'actor', 'action', 'outcome', 'sequence', 'hash'],
  };
  return Object.entries(AUDIT_ACTIONS).map(([action, description]) => ({
    type: `audit.${action}`,
    description: `Audit log: ${description.charAt(0).toLowerCase()}${description.slice(1)} (enterprise; sent once sealed)`,
    schema,
    example: {
      id: ids.agent,
      occurredAt: '2026-01-01T00:00:00.000Z',
      actor: { type: 'user', id: ids.agent, name: 'ada@example.com', ip: '192.0.2.1', userAgent: 'curl/8', via: 'password' },
      action,
      target: { type: 'agent', id: ids.agent, name: 'triage' },
      outcome: 'success',
      requestId: 'req-1',
      changes: null,
      sequence: 42,
      hash: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    },
  }));
}

/** What `*` leaves out: the audit log's events are subscribed to by name (`audit.*`). */
const AUDIT_PREFIX = 'audit.';

const KNOWN = new Set(EVENT_TYPES.map((e) => e.type));

/** `agent.execution.failed`, or a prefix wildcard such as `workflow.run.*` (or `*`) that matches at least one type. */
export function isEventPattern(pattern: string): boolean {
  if (KNOWN.has(pattern)) return true;
  if (pattern === '*') return true;
  return pattern.endsWith('.*') && EVENT_TYPES.some((e) => e.type.startsWith(pattern.slice(0, -1)));
}

export function matchesPattern(pattern: string, type: string): boolean {
  if (pattern === '*') return !type.startsWith(AUDIT_PREFIX);
  return pattern.endsWith('.*') ? type.startsWith(pattern.slice(0, -1)) : pattern === type;
}
