import { EventEmitter } from 'node:events';
import { Injectable } from '@nestjs/common';
import { Signals } from '../../../queue/signals';

/** A piece of a turn's text as the model streams it. */
export interface AgentDelta {
  turn: number;
  text: string;
}

const TOPIC = 'agent.delta';
/** Text for other processes is gathered this long per execution, so a fast model costs one NOTIFY per window, not per token. */
const BATCH_MS = 50;
/** Characters of text in one batch: even at 4 bytes each, a batch fits a NOTIFY. */
const BATCH_CHARACTERS = 1500;

/**
 * The text of tool-calling executions as their models stream it, to live streams: at once in
 * this process, and in batches (best effort, through the database's NOTIFY) in the others, so
 * an API replica streams what a worker's model writes. Deltas are not kept: a stream that
 * misses some sees each turn whole when it is committed.
 */
@Injectable()
export class AgentDeltas {
  private readonly emitter = new EventEmitter().setMaxListeners(0);
  /** Text not yet sent to other processes, per execution. */
  private readonly outbox = new Map<string, AgentDelta>();

  constructor(private readonly signals: Signals) {
    signals.onData(TOPIC, (executionId, data) => {
      if (this.emitter.listenerCount(executionId) === 0) return;
      try {
        this.emitter.emit(executionId, JSON.parse(data) as AgentDelta);
      } catch {
        // A batch cut at the NOTIFY size is dropped: the committed turn has the whole text.
      }
    });
  }

  emit(executionId: string, turn: number, text: string): void {
    this.emitter.emit(executionId, { turn, text });
    const pending = this.outbox.get(executionId);
    if (pending && pending.turn === turn && pending.text.length + text.length <= BATCH_CHARACTERS) {
      pending.text += text;
      return;
    }
    if (pending) this.send(executionId);
    this.outbox.set(executionId, { turn, text });
    setTimeout(() => this.send(executionId), BATCH_MS).unref();
  }

  /** Calls `listener` with each delta of the execution until the returned function is called. */
  follow(executionId: string, listener: (delta: AgentDelta) => void): () => void {
    this.emitter.on(executionId, listener);
    return () => this.emitter.off(executionId, listener);
  }

  private send(executionId: string): void {
    const pending = this.outbox.get(executionId);
    if (!pending) return;
    this.outbox.delete(executionId);
    this.signals.broadcast(TOPIC, executionId, JSON.stringify(pending));
  }
}
