import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
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

  async commitTurn(organizationId: string, executionId: string, turn: JournalTurn): Promise<void> {
    const rows: unknown[][] = [
      [0, null, turn.reply.model, { reply: turn.reply, repair: turn.repair }, null, turn.startedAt, turn.finishedAt],
      ...turn.calls.map((call, i) => [
        i + 1,
        call.callId,
        call.name,
        { arguments: call.arguments },
        call.result,
        call.startedAt,
        call.finishedAt,
      ]),
    ];
    const params: unknown[] = [executionId, organizationId, turn.turn];
    const values = rows.map((row) => {
      const at = params.length;
      params.push(row[0], row[1], row[2], JSON.stringify(row[3]), row[4] === null ? null : JSON.stringify(row[4]), row[5], row[6]);
      return `($1, $2, $3, $${at + 1}, $${at + 2}, $${at + 3}, $${at + 4}, $${at + 5}, $${at + 6}, $${at + 7})`;
    });
    await this.txHost.tx.query(
      `INSERT INTO agent_execution_steps (execution_id, organization_id, turn, position, call_id, name, body, result, started_at, finished_at)
       VALUES ${values.join(', ')} ON CONFLICT DO NOTHING`,
      params,
    );
  }

  async commitCall(executionId: string, turn: number, callId: string, result: ToolResult, finishedAt: Date): Promise<void> {
    await this.txHost.tx.query(
      `UPDATE agent_execution_steps SET result = $4, finished_at = $5
       WHERE execution_id = $1 AND turn = $2 AND position > 0 AND call_id = $3 AND result IS NULL`,
      [executionId, turn, callId, JSON.stringify(result), finishedAt],
    );
  }

  private query<T>(sql: string, params: unknown[]): Promise<T[]> {
    return this.txHost.tx.query(sql, params);
  }
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
