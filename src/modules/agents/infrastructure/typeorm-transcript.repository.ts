import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { Coalescer } from '../../../shared/batching/coalescer';
import { JournalTurn, ModelReply, ToolResult } from '../../plugins/domain/agent-loop';
import { TranscriptRepository, TranscriptTotals } from '../domain/transcript.repository';

interface RawStep {
  turn: number;
  position: number;
  call_id: string | null;
  name: string;
  body: { reply?: ModelReply; repair?: string | null; arguments?: unknown };
  result: ToolResult | null;
  started_at: Date;
  finished_at: Date | null;
}

const COLUMNS = 'turn, position, call_id, name, body, result, started_at, finished_at';

@Injectable()
export class TypeOrmTranscriptRepository extends TranscriptRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {
    super();
  }

  async load(executionId: string): Promise<JournalTurn[]> {
    return turnsOf(
      await this.query<RawStep>(`SELECT ${COLUMNS} FROM agent_execution_steps WHERE execution_id = $1 ORDER BY turn, position`, [
        executionId,
      ]),
    );
  }

  async page(executionId: string, afterTurn: number, limit: number): Promise<JournalTurn[]> {
    return turnsOf(
      await this.query<RawStep>(
        `SELECT ${COLUMNS} FROM agent_execution_steps WHERE execution_id = $1 AND turn > $2 AND turn <= $2 + $3 ORDER BY turn, position`,
        [executionId, afterTurn, limit],
      ),
    );
  }

  async totals(executionId: string): Promise<TranscriptTotals | null> {
    const [row] = await this.query<{ turns: number; calls: number; prompt: string; completion: string; total: string }>(
      `SELECT count(*) FILTER (WHERE position = 0)::int AS turns, count(*) FILTER (WHERE position > 0)::int AS calls,
         COALESCE(sum((body->'reply'->'usage'->>'promptTokens')::bigint), 0) AS prompt,
         COALESCE(sum((body->'reply'->'usage'->>'completionTokens')::bigint), 0) AS completion,
         COALESCE(sum((body->'reply'->'usage'->>'totalTokens')::bigint), 0) AS total
       FROM agent_execution_steps WHERE execution_id = $1`,
      [executionId],
    );
    if (!row?.turns) return null;
    return {
      turns: row.turns,
      toolCalls: row.calls,
      usage: { promptTokens: Number(row.prompt), completionTokens: Number(row.completion), totalTokens: Number(row.total) },
    };
  }

  commitTurn(organizationId: string, executionId: string, turn: JournalTurn): Promise<void> {
    return this.turnWrites.add({ organizationId, executionId, turn });
  }

  commitCall(executionId: string, turn: number, callId: string, result: ToolResult, finishedAt: Date): Promise<void> {
    return this.callWrites.add({ executionId, turn, callId, result, finishedAt });
  }

  /** Turns committed at once by the conversations of a worker go in one statement (group commit). */
  private readonly turnWrites = new Coalescer<{ organizationId: string; executionId: string; turn: JournalTurn }, void>(async (items) => {
    const rows = items.flatMap(({ organizationId, executionId, turn }) => [
      [
        executionId,
        organizationId,
        turn.turn,
        0,
        null,
        turn.reply.model,
        { reply: turn.reply, repair: turn.repair },
        null,
        turn.startedAt,
        turn.finishedAt,
      ],
      ...turn.calls.map((call, i) => [
        executionId,
        organizationId,
        turn.turn,
        i + 1,
        call.callId,
        call.name,
        { arguments: call.arguments },
        call.result,
        call.startedAt,
        call.finishedAt,
      ]),
    ]);
    await this.txHost.tx.query(
      `INSERT INTO agent_execution_steps (execution_id, organization_id, turn, position, call_id, name, body, result, started_at, finished_at)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::smallint[], $5::varchar[], $6::varchar[], $7::json[], $8::json[], $9::timestamptz[], $10::timestamptz[])
       ON CONFLICT DO NOTHING`,
      columns(rows, [6, 7]),
    );
    return items.map(() => undefined);
  });

  private readonly callWrites = new Coalescer<
    { executionId: string; turn: number; callId: string; result: ToolResult; finishedAt: Date },
    void
  >(async (items) => {
    await this.txHost.tx.query(
      `UPDATE agent_execution_steps s SET result = v.result, finished_at = v.finished_at
         FROM unnest($1::uuid[], $2::int[], $3::varchar[], $4::json[], $5::timestamptz[]) AS v(execution_id, turn, call_id, result, finished_at)
         WHERE s.execution_id = v.execution_id AND s.turn = v.turn AND s.position > 0 AND s.call_id = v.call_id AND s.result IS NULL`,
      columns(
        items.map((c) => [c.executionId, c.turn, c.callId, c.result, c.finishedAt]),
        [3],
      ),
    );
    return items.map(() => undefined);
  });

  private query<T>(sql: string, params: unknown[]): Promise<T[]> {
    return this.txHost.tx.query(sql, params);
  }
}

/** Rows as one array per column (for `unnest`), the columns at `jsonColumns` as JSON text (null stays null). */
function columns(rows: unknown[][], jsonColumns: number[]): unknown[][] {
  const width = rows[0]?.length ?? 0;
  return Array.from({ length: width }, (_, c) =>
    rows.map((row) => (jsonColumns.includes(c) && row[c] !== null ? JSON.stringify(row[c]) : row[c])),
  );
}

/** Rows in (turn, position) order, grouped into turns. */
function turnsOf(rows: RawStep[]): JournalTurn[] {
  const turns: JournalTurn[] = [];
  for (const row of rows) {
    if (row.position === 0) {
      turns.push({
        turn: row.turn,
        reply: row.body.reply!,
        repair: row.body.repair ?? null,
        startedAt: row.started_at,
        finishedAt: row.finished_at ?? row.started_at,
        calls: [],
      });
    } else {
      turns.at(-1)?.calls.push({
        callId: row.call_id ?? '',
        name: row.name,
        arguments: row.body.arguments ?? null,
        result: row.result,
        startedAt: row.started_at,
        finishedAt: row.finished_at,
      });
    }
  }
  return turns;
}
