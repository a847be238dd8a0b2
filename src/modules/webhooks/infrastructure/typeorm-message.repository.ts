import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { DurableTable, rowsOf } from '../../../database/durable-table';
import { keysetSql } from '../../../database/keyset';
import { ReadDatabase } from '../../../database/read-database';
import { JobRef } from '../../../shared/jobs/job-ref';
import { Failure, Outcome } from '../../../shared/jobs/outcome';
import { KeysetPosition, Page, PageRequest, toPage } from '../../../shared/pagination/cursor';
import { DeliveryAttempt, MessageStatus, MessageSummary, WebhookMessage } from '../domain/message';
import { DeliveryFilter, EndpointRepository, MessageRepository, StartedDelivery, UnfinishedMessage } from '../domain/webhook.repository';

interface RawMessage {
  id: string;
  organization_id: string;
  endpoint_id: string;
  type: string;
  payload: string;
  status: MessageStatus;
  attempts: number;
  job_id: string | null;
  error: Failure | null;
  next_attempt_at: Date | null;
  created_at: Date;
  finished_at: Date | null;
}

const MESSAGES = new DurableTable('webhook_messages', 'text');
const UNFINISHED = MESSAGES.unfinished;
const COLUMNS =
  'id, organization_id, endpoint_id, type, payload, status, attempts, job_id, error, next_attempt_at, created_at, finished_at';
/** All but the payload: a page of many messages never reads (so never detoasts) their payloads. */
const SUMMARY_COLUMNS = COLUMNS.split(', ')
  .filter((column) => column !== 'payload')
  .join(', ');
/** What an outcome is recorded as: a delivery canceled because its endpoint is disabled is `skipped`. */
const FINAL_STATUS: Record<Outcome['status'], MessageStatus> = {
  succeeded: 'succeeded',
  failed: 'failed',
  timed_out: 'failed',
  canceled: 'skipped',
};

/** Plain SQL like the other durable records: every status change is one guarded statement. */
@Injectable()
export class TypeOrmMessageRepository extends MessageRepository {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly endpoints: EndpointRepository,
    private readonly reads: ReadDatabase,
  ) {
    super();
  }

  async insert(message: WebhookMessage): Promise<void> {
    await this.insertMany([message]);
  }

  async insertMany(messages: WebhookMessage[]): Promise<void> {
    if (!messages.length) return;
    await this.query(
      `INSERT INTO webhook_messages (${COLUMNS})
       SELECT m.id, m.organization_id, m.endpoint_id, m.type, m.payload, m.status, 0, m.job_id, NULLIF(m.error, 'null'::jsonb), NULL,
         m.created_at, m.finished_at
       FROM jsonb_to_recordset($1::jsonb) AS m(id text, organization_id uuid, endpoint_id uuid, type text, payload text,
         status text, job_id uuid, error jsonb, created_at timestamptz, finished_at timestamptz)`,
      [
        JSON.stringify(
          messages.map((m) => ({
            id: m.id,
            organization_id: m.organizationId,
            endpoint_id: m.endpointId,
            type: m.type,
            payload: m.payload,
            status: m.status,
            job_id: m.jobId,
            error: m.error,
            created_at: m.createdAt,
            finished_at: m.finishedAt,
          })),
        ),
      ],
    );
  }

  async findById(id: string): Promise<WebhookMessage | null> {
    const [row] = await this.query<RawMessage>(`SELECT ${COLUMNS} FROM webhook_messages WHERE id = $1`, [id]);
    return row ? toMessage(row) : null;
  }

  async find(organizationId: string, endpointId: string, id: string): Promise<WebhookMessage | null> {
    const [row] = await this.query<RawMessage>(
      `SELECT ${COLUMNS} FROM webhook_messages WHERE organization_id = $1 AND endpoint_id = $2 AND id = $3`,
      [organizationId, endpointId, id],
    );
    return row ? toMessage(row) : null;
  }

  /** Starts the messages with their endpoints (only those, not every endpoint of their organizations). */
  async start(jobs: JobRef[]): Promise<StartedDelivery[]> {
    const rows = await this.query<RawMessage>(
      `UPDATE webhook_messages SET status = 'running', attempts = attempts + 1
       WHERE ${MESSAGES.startedBy()} RETURNING ${COLUMNS}`,
      MESSAGES.startParams(jobs),
    );
    if (!rows.length) return [];
    const messages = rows.map(toMessage);
    const endpoints = new Map((await this.endpoints.withIds([...new Set(messages.map((m) => m.endpointId))])).map((e) => [e.id, e]));
    return messages.flatMap((message) => {
      const endpoint = endpoints.get(message.endpointId);
      // The endpoint is read by id alone: it must be the message's organization's.
      return endpoint?.organizationId === message.organizationId ? [{ message, endpoint }] : [];
    });
  }

  async finish(outcomes: Array<{ id: string; outcome: Outcome }>): Promise<Array<WebhookMessage | null>> {
    const rows = await this.query<RawMessage>(
      `UPDATE webhook_messages w SET status = o.status, error = NULLIF(o.error, 'null'::jsonb), finished_at = now(), next_attempt_at = NULL
       FROM jsonb_to_recordset($1::jsonb) AS o(id text, status text, error jsonb)
       WHERE w.id = o.id AND w.status = 'running' AND w.id = ANY($2::text[]) RETURNING ${COLUMNS.split(', ')
         .map((c) => `w.${c}`)
         .join(', ')}`,
      [
        JSON.stringify(
          outcomes.map(({ id, outcome }) => ({
            id,
            status: FINAL_STATUS[outcome.status],
            error: outcome.status === 'succeeded' ? null : outcome.error,
          })),
        ),
        // The ids again, as an array: the planner prunes the partitions by it (not by the JSON's).
        outcomes.map((o) => o.id),
      ],
    );
    const byId = new Map(rows.map((r) => [r.id, toMessage(r)]));
    return outcomes.map((o) => byId.get(o.id) ?? null);
  }

  async unfinished(olderThanMs: number, limit: number): Promise<UnfinishedMessage[]> {
    const rows = await MESSAGES.unfinishedOnJobs<{ id: string; organization_id: string; job_id: string | null; attempts: number }>(
      (sql, params) => this.query(sql, params),
      olderThanMs,
      limit,
      { columns: 't.id, t.organization_id, t.job_id, t.attempts' },
    );
    return rows.map((r) => ({ id: r.id, organizationId: r.organization_id, jobId: r.job_id, attempts: r.attempts }));
  }

  moveToJob(id: string, fromJobId: string | null, toJobId: string): Promise<boolean> {
    return MESSAGES.moveToJob((sql, params) => this.query(sql, params), id, fromJobId, toJobId);
  }

  async abandon(id: string, jobId: string | null, error: Failure): Promise<WebhookMessage | null> {
    const [row] = await this.query<RawMessage>(
      `UPDATE webhook_messages SET status = 'failed', error = $3, finished_at = now() WHERE ${MESSAGES.onItsJob} RETURNING ${COLUMNS}`,
      [id, jobId, JSON.stringify(error)],
    );
    return row ? toMessage(row) : null;
  }

  /** A retry waits `queued` with its time in `next_attempt_at` (the delivery log shows both). */
  async wait(id: string, fromJobId: string, toJobId: string, at: Date, error: Failure | null): Promise<WebhookMessage | null> {
    const [row] = await this.query<RawMessage>(
      `UPDATE webhook_messages SET status = 'queued', job_id = $3, next_attempt_at = $4, error = $5
       WHERE id = $1 AND job_id = $2 AND status = 'running' RETURNING ${COLUMNS}`,
      [id, fromJobId, toJobId, at, JSON.stringify(error)],
    );
    return row ? toMessage(row) : null;
  }

  async requeue(id: string, toJobId: string): Promise<WebhookMessage | null> {
    const [row] = await this.query<RawMessage>(
      `UPDATE webhook_messages SET status = 'queued', job_id = $2, finished_at = NULL, next_attempt_at = NULL
       WHERE id = $1 AND NOT ${UNFINISHED} RETURNING ${COLUMNS}`,
      [id, toJobId],
    );
    return row ? toMessage(row) : null;
  }

  async failedSince(endpointId: string, since: Date, limit: number, after?: KeysetPosition): Promise<MessageSummary[]> {
    const rows = await this.query<RawSummary>(
      `SELECT ${SUMMARY_COLUMNS} FROM webhook_messages WHERE endpoint_id = $1 AND status IN ('failed', 'skipped') AND created_at >= $2
       AND ($4::timestamptz IS NULL OR (created_at, id) > ($4::timestamptz, $5::text))
       ORDER BY created_at, id LIMIT $3`,
      [endpointId, since, limit, after?.createdAt ?? null, after?.id ?? null],
    );
    return rows.map(toSummary);
  }

  /** From the read replica when there is one (ReadDatabase): a page of the log may lag. */
  async history(organizationId: string, endpointId: string, page: PageRequest, filter: DeliveryFilter): Promise<Page<MessageSummary>> {
    const pending = filter.status === 'pending';
    const { tail, params } = keysetSql(
      { organization_id: organizationId, endpoint_id: endpointId },
      { status: pending ? undefined : filter.status, since: filter.since },
      page,
    );
    const where = pending ? tail.replace('WHERE ', `WHERE ${UNFINISHED} AND `) : tail;
    const rows = await this.reads.manager.query<RawSummary[]>(`SELECT ${SUMMARY_COLUMNS} FROM webhook_messages ${where}`, params);
    return toPage(rows.map(toSummary), page.limit, (m) => m);
  }

  async retryNow(endpointId: string): Promise<string[]> {
    const rows = await this.query<{ job_id: string }>(
      `UPDATE webhook_messages SET next_attempt_at = now()
       WHERE endpoint_id = $1 AND status = 'queued' AND next_attempt_at > now() AND job_id IS NOT NULL RETURNING job_id`,
      [endpointId],
    );
    return rows.map((r) => r.job_id);
  }

  async addAttempts(attempts: DeliveryAttempt[]): Promise<void> {
    if (!attempts.length) return;
    await this.query(
      `INSERT INTO webhook_attempts (id, message_id, attempted_at, status_code, latency_ms, response_body, error)
       SELECT a.id, a.message_id, a.attempted_at, a.status_code, a.latency_ms, a.response_body, a.error
       FROM jsonb_to_recordset($1::jsonb) AS a(id uuid, message_id text, attempted_at timestamptz, status_code int,
         latency_ms int, response_body text, error text)`,
      [
        JSON.stringify(
          attempts.map((a) => ({
            id: a.id,
            message_id: a.messageId,
            attempted_at: a.attemptedAt,
            status_code: a.statusCode,
            latency_ms: a.latencyMs,
            response_body: a.responseBody,
            error: a.error,
          })),
        ),
      ],
    );
  }

  async attempts(messageId: string): Promise<DeliveryAttempt[]> {
    const rows = await this.query<{
      id: string;
      message_id: string;
      attempted_at: Date;
      status_code: number | null;
      latency_ms: number;
      response_body: string | null;
      error: string | null;
    }>(`SELECT * FROM webhook_attempts WHERE message_id = $1 ORDER BY attempted_at, id`, [messageId]);
    return rows.map((r) => ({
      id: r.id,
      messageId: r.message_id,
      attemptedAt: r.attempted_at,
      statusCode: r.status_code,
      latencyMs: r.latency_ms,
      responseBody: r.response_body,
      error: r.error,
    }));
  }

  async pendingByState(): Promise<Record<'due' | 'retry' | 'running', number>> {
    const rows = await this.query<{ state: 'due' | 'retry' | 'running'; count: string }>(
      `SELECT CASE WHEN status = 'running' THEN 'running' WHEN next_attempt_at > now() THEN 'retry' ELSE 'due' END AS state,
              count(*) AS count
       FROM webhook_messages WHERE ${UNFINISHED} GROUP BY 1`,
      [],
    );
    const counts = { due: 0, retry: 0, running: 0 };
    for (const row of rows) counts[row.state] = Number(row.count);
    return counts;
  }

  /** Rows of a SELECT, or of an UPDATE/DELETE ... RETURNING (which TypeORM answers as [rows, count]). */
  private query<T = unknown>(sql: string, params: unknown[]): Promise<T[]> {
    return rowsOf<T>(this.txHost.tx, sql, params);
  }
}

type RawSummary = Omit<RawMessage, 'payload'>;

function toMessage(r: RawMessage): WebhookMessage {
  return { ...toSummary(r), payload: r.payload };
}

function toSummary(r: RawSummary): MessageSummary {
  return {
    id: r.id,
    organizationId: r.organization_id,
    endpointId: r.endpoint_id,
    type: r.type,
    status: r.status,
    attempts: r.attempts,
    jobId: r.job_id,
    error: r.error,
    nextAttemptAt: r.next_attempt_at,
    createdAt: r.created_at,
    finishedAt: r.finished_at,
  };
}
