import { personBehind, personOf, type Principal, type Trigger } from '../../../shared/auth/principal';
import type { Approvers, WaitDefinition } from '../../workflows/domain/definition';

/** Who answered a wait: a user or an API key through the API, or an event. */
export type AnsweredBy = { type: 'user'; id: string; email: string } | { type: 'api_key'; id: string } | { type: 'event'; name: string };

/** A wait step's output: the answer's data, who gave it, when (ISO 8601). */
export interface WaitAnswer {
  data: unknown;
  by: AnsweredBy | null;
  at: string;
  /** Set when the wait timed out and the step went on (`onTimeout: continue`). */
  timedOut?: true;
}

export const WAIT_STATUSES = ['pending', 'answered', 'closed'] as const;

/** What a waiting wait step waits for, on its step in the run. */
export interface WaitingFor {
  for: WaitDefinition['for'];
  event: string | null;
  key: string | null;
  approvers: Approvers | null;
  timeoutAt: string | null;
}

/** One wait step of one run: what it waits for and, once given, its answer. */
export interface StepWait {
  runId: string;
  stepId: string;
  organizationId: string;
  workflowId: string;
  kind: WaitDefinition['for'];
  eventName: string | null;
  eventKey: string | null;
  schema: Record<string, unknown> | null;
  approvers: Approvers | null;
  selfApproval: boolean;
  status: (typeof WAIT_STATUSES)[number];
  answer: WaitAnswer | null;
  createdAt: Date;
  timeoutAt: Date | null;
}

/** Approvers when a wait names none: whoever may run workflows. */
export const DEFAULT_APPROVERS: Approvers = { roles: ['admin', 'member'] };

export function waitingFor(wait: StepWait): WaitingFor {
  return {
    for: wait.kind,
    event: wait.eventName,
    key: wait.eventKey,
    approvers: wait.kind === 'approval' ? (wait.approvers ?? DEFAULT_APPROVERS) : null,
    timeoutAt: wait.timeoutAt?.toISOString() ?? null,
  };
}

/** Whether the caller is one of the wait's approvers (by role, user id or email). */
export function isApprover(approvers: Approvers | null, caller: Principal): boolean {
  const { roles, users } = approvers ?? DEFAULT_APPROVERS;
  if ((roles as readonly string[] | undefined)?.includes(caller.role)) return true;
  const email = caller.email.toLowerCase();
  return users?.some((u) => u === caller.userId || u.toLowerCase() === email) ?? false;
}

/**
 * Whether the caller started the run: the same person, by whatever path either went (a session,
 * a personal key, trigger now, a replay, a parent run, an agent's tool), or the same key or
 * service account (which has no person, so it is refused only as itself).
 */
export function startedRun(triggeredBy: Trigger, caller: Principal): boolean {
  const person = personOf(caller);
  if (person && personBehind(triggeredBy) === person) return true;
  if (triggeredBy.type === 'mcp') return triggeredBy.id === caller.userId;
  if (triggeredBy.type !== 'api_key') return false;
  const key = caller.credential.type === 'api_key' ? caller.credential.keyId : null;
  return triggeredBy.id === key || (triggeredBy.serviceAccountId !== undefined && triggeredBy.serviceAccountId === caller.userId);
}

/** Who answers, as the step's output names them. */
export function answeredBy(caller: Principal): AnsweredBy {
  return caller.credential.type === 'api_key'
    ? { type: 'api_key', id: caller.credential.keyId }
    : { type: 'user', id: caller.userId, email: caller.email };
}
