import { Principal } from '../../../shared/auth/principal';
import { answeredBy, isApprover, startedRun } from './wait';

const session = (over: Partial<Principal> = {}): Principal => ({
  userId: 'u-1',
  organizationId: 'o-1',
  role: 'member',
  isOperator: false,
  email: 'Ada@Example.com',
  credential: { type: 'session' },
  ...over,
});
const viaKey = (over: Partial<Principal> = {}): Principal =>
  session({ userId: 'sa-1', credential: { type: 'api_key', keyId: 'k-1', serviceAccountId: 'sa-1', scopes: null }, ...over });

describe('wait approvers', () => {
  it('takes admins and members when a wait names no approvers, never viewers', () => {
    expect(isApprover(null, session({ role: 'admin' }))).toBe(true);
    expect(isApprover(null, session({ role: 'member' }))).toBe(true);
    expect(isApprover(null, session({ role: 'viewer' }))).toBe(false);
  });

  it('takes a role named, or a user by id or by email in any case', () => {
    expect(isApprover({ roles: ['admin'] }, session())).toBe(false);
    expect(isApprover({ roles: ['admin'], users: ['u-1'] }, session())).toBe(true);
    expect(isApprover({ users: ['ada@example.com'] }, session())).toBe(true);
    expect(isApprover({ users: ['bob@example.com'] }, session())).toBe(false);
    expect(isApprover({ users: [] }, session({ role: 'admin' }))).toBe(false);
  });

  it('knows who started a run: the user, the key, or the key’s service account', () => {
    expect(startedRun({ type: 'user', id: 'u-1' }, session())).toBe(true);
    expect(startedRun({ type: 'user', id: 'u-2' }, session())).toBe(false);
    expect(startedRun({ type: 'api_key', id: 'k-1' }, viaKey())).toBe(true);
    expect(
      startedRun(
        { type: 'api_key', id: 'k-2', serviceAccountId: 'sa-1' },
        viaKey({ credential: { type: 'api_key', keyId: 'k-3', serviceAccountId: 'sa-1', scopes: null } }),
      ),
    ).toBe(true);
    expect(
      startedRun(
        { type: 'api_key', id: 'k-2' },
        viaKey({ credential: { type: 'api_key', keyId: 'k-3', serviceAccountId: null, scopes: null } }),
      ),
    ).toBe(false);
    expect(startedRun({ type: 'schedule', id: 's-1', scheduledFor: '2026-01-01T00:00:00Z' }, session())).toBe(false);
  });

  it('knows the person behind a run, whichever way either of them went', () => {
    const personalKey = session({ credential: { type: 'api_key', keyId: 'k-9', serviceAccountId: null, scopes: null } });
    // Started with a personal key, answered with a session, and the other way round.
    expect(startedRun({ type: 'api_key', id: 'k-9', person: 'u-1' }, session())).toBe(true);
    expect(startedRun({ type: 'user', id: 'u-1' }, personalKey)).toBe(true);
    // Trigger now, a replay, a parent run, an agent's tool: the person recorded with it.
    expect(startedRun({ type: 'schedule', id: 's-1', scheduledFor: '2026-01-01T00:00:00Z', person: 'u-1' }, session())).toBe(true);
    expect(startedRun({ type: 'webhook', id: 't-1', eventId: 'e-1', person: 'u-1' }, personalKey)).toBe(true);
    expect(startedRun({ type: 'workflow_run', id: 'r-1', person: 'u-1' }, session())).toBe(true);
    expect(startedRun({ type: 'agent_execution', id: 'x-1', person: 'u-2' }, session())).toBe(false);
    // A service account's key has no person: a person recorded does not match it, its own key and account do.
    expect(startedRun({ type: 'workflow_run', id: 'r-1', person: 'sa-1' }, viaKey())).toBe(false);
    expect(startedRun({ type: 'mcp', id: 'sa-1', keyId: 'k-2' }, viaKey())).toBe(true);
  });

  it('names who answered: a user with their email, or the key', () => {
    expect(answeredBy(session())).toEqual({ type: 'user', id: 'u-1', email: 'Ada@Example.com' });
    expect(answeredBy(viaKey())).toEqual({ type: 'api_key', id: 'k-1' });
  });
});
