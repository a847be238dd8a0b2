import { ApiProperty } from '@nestjs/swagger';
import { FailureResponse } from '../../shared/http/failure.response';
import { ANY_JSON } from '../../shared/http/json-value.schema';
import { JournalCall, JournalTurn, TokenUsage } from '../plugins/domain/agent-loop';
import { TranscriptTotals } from './domain/transcript.repository';
import { Execution } from './domain/execution';
import { ExecutionResponse } from './execution.response';

export class TokenUsageResponse {
  @ApiProperty() promptTokens!: number;
  @ApiProperty() completionTokens!: number;
  @ApiProperty() totalTokens!: number;
}

export class ToolCallRequestResponse {
  @ApiProperty({ description: "The model's id of the call" }) id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ description: 'As the model sent them (a JSON text)' }) arguments!: string;
}

export class ToolCallResponse {
  @ApiProperty() callId!: string;
  @ApiProperty({ description: 'The tool' }) name!: string;
  @ApiProperty({ ...ANY_JSON, nullable: true, description: "The model's arguments, parsed (their text where they were not JSON)" })
  arguments!: unknown;
  @ApiProperty({ enum: ['running', 'succeeded', 'failed'], description: 'running: not finished (it runs again on the next attempt)' })
  status!: 'running' | 'succeeded' | 'failed';
  @ApiProperty({ ...ANY_JSON, nullable: true, description: "The tool's output, whole (the model is sent at most 16 KiB of it)" })
  output!: unknown;
  @ApiProperty({ type: FailureResponse, nullable: true, description: 'What the model was told went wrong' }) error!: FailureResponse | null;
  @ApiProperty() startedAt!: string;
  @ApiProperty({ type: String, nullable: true }) finishedAt!: string | null;

  static of(call: JournalCall): ToolCallResponse {
    const result = call.result;
    return {
      callId: call.callId,
      name: call.name,
      arguments: call.arguments,
      status: result ? result.status : 'running',
      output: result?.status === 'succeeded' ? result.output : null,
      error: result?.status === 'failed' ? result.error : null,
      startedAt: call.startedAt.toISOString(),
      finishedAt: call.finishedAt?.toISOString() ?? null,
    };
  }
}

/** One model turn: what the model answered and the tool calls it started. */
export class TurnResponse {
  @ApiProperty({ description: 'From 1' }) turn!: number;
  @ApiProperty({ description: 'The model that answered' }) model!: string;
  @ApiProperty({ type: String, nullable: true, description: "The model's text" }) content!: string | null;
  @ApiProperty({ type: [ToolCallRequestResponse], description: 'The tool calls the model asked for' })
  toolCallsRequested!: ToolCallRequestResponse[];
  @ApiProperty({ type: TokenUsageResponse }) usage!: TokenUsage;
  @ApiProperty({ type: String, nullable: true }) finishReason!: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Sent back to the model after this turn: its answer did not match output.schema',
  })
  repair!: string | null;
  @ApiProperty({ type: [ToolCallResponse], description: 'The calls this turn ran (none when a limit ended the execution first)' })
  toolCalls!: ToolCallResponse[];
  @ApiProperty() startedAt!: string;
  @ApiProperty() finishedAt!: string;

  static of(turn: JournalTurn): TurnResponse {
    const { reply } = turn;
    return {
      turn: turn.turn,
      model: reply.model,
      content: reply.content,
      toolCallsRequested: reply.toolCalls,
      usage: reply.usage,
      finishReason: reply.finishReason,
      repair: turn.repair,
      toolCalls: turn.calls.map(ToolCallResponse.of),
      startedAt: turn.startedAt.toISOString(),
      finishedAt: turn.finishedAt.toISOString(),
    };
  }
}

export class TranscriptPageResponse {
  @ApiProperty({ type: [TurnResponse] }) data!: TurnResponse[];
  @ApiProperty({ type: String, nullable: true, description: 'Pass as `cursor` to GET .../transcript for the next turns' })
  nextCursor!: string | null;
}

export class ConversationResponse {
  @ApiProperty({ description: 'Model turns committed' }) turns!: number;
  @ApiProperty({ description: 'Tool calls started' }) toolCalls!: number;
  @ApiProperty({ type: TokenUsageResponse, description: 'Tokens of every turn' }) usage!: TokenUsage;
  @ApiProperty({ type: TranscriptPageResponse, description: 'The first turns; GET .../transcript pages through the rest' })
  transcript!: TranscriptPageResponse;
}

/** One execution whole: with its conversation when its agent calls tools. */
export class ExecutionDetailResponse extends ExecutionResponse {
  @ApiProperty({
    type: ConversationResponse,
    nullable: true,
    description: 'For agents that call tools (llm.agent): the conversation so far',
  })
  conversation!: ConversationResponse | null;

  static detail(
    execution: Execution,
    totals: TranscriptTotals | null,
    first: { data: JournalTurn[]; nextCursor: string | null },
  ): ExecutionDetailResponse {
    return {
      ...ExecutionResponse.of(execution),
      conversation: totals && {
        ...totals,
        transcript: { data: first.data.map(TurnResponse.of), nextCursor: first.nextCursor },
      },
    };
  }
}
