import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DomainError } from '../../../shared/errors/domain-error';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Approvers } from '../../workflows/domain/definition';
import { AnsweredBy, StepWait, WaitAnswer } from '../domain/wait';
import { Approver, KeptEvent, WaitRepository } from '../domain/wait.repository';

interface RawWait {
  run_id: string;
  step_id: string;
  organization_id: string;
  workflow_id: string;
  kind: StepWait['kind'];
  event_name: string | null;
  event_key: string | null;
  schema: Record<string, unknown> | null;
  approvers: Approvers | null;
  self_approval: boolean;
  status: StepWait['status'];
  answer: WaitAnswer | null;
  created_at: Date;
  timeout_at: Date | null;
}

/** Plain SQL: every answer is one statement guarded on the wait being pending. */
@Injectable()
export class TypeOrmWaitRepository extends WaitRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {
    super();
  }

  async open(wait: StepWait): Promise<StepWait> {
    await this.query(
      `INSERT INTO workflow_run_waits (run_id, step_id, organization_id, workflow_id, kind, event_name, event_key, schema, approvers,
         self_approval, status, answer, created_at, timeout_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (run_id, step_id) DO NOTHING`,
      [
        wait.runId,
        wait.stepId,
        wait.organizationId,
        wait.workflowId,
        wait.kind,
        wait.eventName,
        wait.eventKey,
        json(wait.schema),
        json(wait.approvers),
        wait.selfApproval,
        wait.status,
        json(wait.answer),
        wait.createdAt,
        wait.timeoutAt,
      ],
    );
    return (await this.find(wait.runId, wait.stepId))!;
  }

  async find(runId: string, stepId: string): Promise<StepWait | null> {
    const [row] = await this.query<RawWait>('SELECT * FROM workflow_run_waits WHERE run_id = $1 AND step_id = $2', [runId, stepId]);
    return row ? toWait(row) : null;
  }

  async answer(runId: string, stepId: string, answer: WaitAnswer): Promise<boolean> {
    const rows = await this.query<{ run_id: string }>(
      `WITH answered AS (
         UPDATE workflow_run_waits SET status = 'answered', answer = $3 WHERE run_id = $1 AND step_id = $2 AND status = 'pending' RETURNING run_id
       ) SELECT * FROM answered`,
      [runId, stepId, json(answer)],
    );
    return rows.length > 0;
  }

  async answerEvent(organizationId: string, name: string, key: string, answer: WaitAnswer): Promise<string[]> {
    const rows = await this.query<{ run_id: string }>(
      `WITH answered AS (
         UPDATE workflow_run_waits SET status = 'answered', answer = $4
         WHERE organization_id = $1 AND event_name = $2 AND event_key = $3 AND status = 'pending' AND kind = 'event'
           AND (timeout_at IS NULL OR timeout_at > now())
         RETURNING run_id
       ) SELECT DISTINCT run_id FROM answered`,
      [organizationId, name, key, json(answer)],
    );
    return rows.map((r) => r.run_id);
  }

  async lockEvent(organizationId: string, name: string, key: string): Promise<void> {
    await this.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`workflow-event:${organizationId}:${name}:${key}`]);
  }

  async keep(event: KeptEvent): Promise<void> {
    await this.query(
      `INSERT INTO workflow_events (id, organization_id, name, key, data, by, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [randomUUID(), event.organizationId, event.name, event.key, json(event.data), json(event.by), event.createdAt, event.expiresAt],
    );
  }

  async kept(organizationId: string, name: string, key: string, now: Date): Promise<KeptEvent | null> {
    const [row] = await this.query<{ data: unknown; by: AnsweredBy; created_at: Date; expires_at: Date }>(
      `SELECT data, by, created_at, expires_at FROM workflow_events
       WHERE organization_id = $1 AND name = $2 AND key = $3 AND expires_at > $4 ORDER BY expires_at DESC LIMIT 1`,
      [organizationId, name, key, now],
    );
    return row ? { organizationId, name, key, data: row.data, by: row.by, createdAt: row.created_at, expiresAt: row.expires_at } : null;
  }

  async expire(runId: string, stepId: string): Promise<boolean> {
    const rows = await this.query<{ run_id: string }>(
      `WITH closed AS (
         UPDATE workflow_run_waits SET status = 'closed' WHERE run_id = $1 AND step_id = $2 AND status = 'pending' RETURNING run_id
       ) SELECT * FROM closed`,
      [runId, stepId],
    );
    return rows.length > 0;
  }

  async close(runIds: string[]): Promise<void> {
    await this.query(`UPDATE workflow_run_waits SET status = 'closed' WHERE run_id = ANY($1::uuid[]) AND status = 'pending'`, [runIds]);
  }

  async pendingApprovals(approver: Approver, page: PageRequest): Promise<Page<StepWait>> {
    const params: unknown[] = [approver.organizationId, approver.role, approver.userId, approver.email.toLowerCase(), approver.keyId];
    let after = '';
    if (page.cursor) {
      const [createdAt, runId, stepId] = decodeWaitCursor(page.cursor);
      after = `AND (w.created_at, w.run_id, w.step_id) > ($${params.push(createdAt)}, $${params.push(runId)}, $${params.push(stepId)})`;
    }
    // Approvers as `isApprover` reads them; a run's starter is left out where it may not approve
    // (`startedRun`: the person behind it, or the key or service account itself).
    const rows = await this.query<RawWait>(
      `SELECT w.* FROM workflow_run_waits w JOIN workflow_runs r ON r.id = w.run_id
       WHERE w.organization_id = $1 AND w.status = 'pending' AND w.kind = 'approval' AND (w.timeout_at IS NULL OR w.timeout_at > now())
         AND (COALESCE(w.approvers->'roles', '["admin","member"]'::jsonb) ? $2
              OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(COALESCE(w.approvers->'users', '[]'::jsonb)) u(v) WHERE u.v = $3 OR lower(u.v) = $4))
         AND (w.self_approval OR NOT COALESCE(
               r.triggered_by->>'person' = $3
               OR (r.triggered_by->>'type' IN ('user', 'mcp') AND r.triggered_by->>'id' = $3)
               OR (r.triggered_by->>'type' = 'api_key' AND (r.triggered_by->>'id' = $5 OR r.triggered_by->>'serviceAccountId' = $3)),
             false))
         ${after}
       ORDER BY w.created_at, w.run_id, w.step_id LIMIT $${params.push(page.limit + 1)}`,
      params,
    );
    const more = rows.length > page.limit;
    const data = (more ? rows.slice(0, page.limit) : rows).map(toWait);
    const last = data[data.length - 1];
    return { data, nextCursor: more ? encodeWaitCursor(last) : null };
  }

  async purgeKept(now: Date): Promise<number> {
    const rows = await this.query<{ id: string }>(
      'WITH gone AS (DELETE FROM workflow_events WHERE expires_at <= $1 RETURNING id) SELECT id FROM gone',
      [now],
    );
    return rows.length;
  }

  private query<T>(sql: string, params: unknown[]): Promise<T[]> {
    return this.txHost.tx.query<T[]>(sql, params);
  }
}

const json = (value: unknown): string | null => (value === null || value === undefined ? null : JSON.stringify(value));

function toWait(row: RawWait): StepWait {
  return {
    runId: row.run_id,
    stepId: row.step_id,
    organizationId: row.organization_id,
    workflowId: row.workflow_id,
    kind: row.kind,
    eventName: row.event_name,
    eventKey: row.event_key,
    schema: row.schema,
    approvers: row.approvers,
    selfApproval: row.self_approval,
    status: row.status,
    answer: row.answer,
    createdAt: row.created_at,
    timeoutAt: row.timeout_at,
  };
}

function encodeWaitCursor(wait: StepWait): string {
  return Buffer.from(JSON.stringify([wait.createdAt.toISOString(), wait.runId, wait.stepId])).toString('base64url');
}

function decodeWaitCursor(cursor: string): [Date, string, string] {
  try {
    const [at, runId, stepId] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    const createdAt = new Date(at as string);
    const valid =
      typeof at === 'string' &&
      !Number.isNaN(createdAt.getTime()) &&
      typeof runId === 'string' &&
      /^[0-9a-f-]{36}$/i.test(runId) &&
      typeof stepId === 'string' &&
      stepId.length <= 64;
    if (!valid) throw new Error('bad cursor');
    return [createdAt, runId, stepId];
  } catch {
    throw new DomainError('VALIDATION_FAILED', 'The cursor is not valid', [
      { path: 'cursor', message: 'cursor must be a value returned as nextCursor' },
    ]);
  }
}
