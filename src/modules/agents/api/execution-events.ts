import { briefError, byteSize, LivePart, LiveView, version } from '../../../shared/http/live-record';
import { JournalCall, JournalTurn } from '../../plugins/domain/agent-loop';
import { Execution, EXECUTION_STATUSES, isFinished } from '../domain/execution';

/**
 * An execution as its live stream shows it: for a tool-calling agent, a `turn` part per model
 * turn and a `tool` part per tool call, in order; then the `execution` part (the output's size,
 * not the output; the execution's GET has it).
 */
export function executionView(execution: Execution, turns: JournalTurn[] = []): LiveView {
  const data = {
    executionId: execution.id,
    status: execution.status,
    attempts: execution.attempts,
    outputBytes: byteSize(execution.status === 'succeeded', execution.output),
    error: briefError(execution.error),
    startedAt: execution.startedAt,
    finishedAt: execution.finishedAt,
  };
  const conversation = turns.flatMap((turn): LivePart[] => [
    { version: '1', event: 'turn', data: turnData(turn) },
    ...turn.calls.map((call): LivePart => ({ version: call.result ? '1' : '0', event: 'tool', data: callData(turn.turn, call) })),
  ]);
  return {
    parts: [...conversation, { version: version(EXECUTION_STATUSES, execution.status, execution.attempts), event: 'execution', data }],
    state: { execution: data, turns: turns.map((t) => ({ ...turnData(t), calls: t.calls.map((c) => callData(t.turn, c)) })) },
    final: isFinished(execution),
  };
}

function turnData(turn: JournalTurn): object {
  const { content, toolCalls, usage, model, finishReason } = turn.reply;
  return {
    turn: turn.turn,
    content,
    toolCalls: toolCalls.map((c) => ({ id: c.id, name: c.name })),
    usage,
    model,
    finishReason,
    repair: turn.repair,
    startedAt: turn.startedAt,
    finishedAt: turn.finishedAt,
  };
}

function callData(turn: number, call: JournalCall): object {
  return {
    turn,
    callId: call.callId,
    name: call.name,
    arguments: call.arguments,
    status: call.result ? call.result.status : 'running',
    outputBytes: byteSize(call.result?.status === 'succeeded', call.result?.status === 'succeeded' ? call.result.output : null),
    error: call.result?.status === 'failed' ? briefError(call.result.error) : null,
    startedAt: call.startedAt,
    finishedAt: call.finishedAt,
  };
}
