import { EventEmitter } from 'node:events';
import { Injectable } from '@nestjs/common';

/** A piece of a turn's text as the model streams it. */
export interface AgentDelta {
  turn: number;
  text: string;
}

/**
 * The text of tool-calling executions as their models stream it, to live streams in this
 * process. Deltas are not kept and do not cross processes: a stream served by another
 * instance sees each turn whole, when it is committed.
 */
@Injectable()
export class AgentDeltas {
  private readonly emitter = new EventEmitter().setMaxListeners(0);

  emit(executionId: string, turn: number, text: string): void {
    this.emitter.emit(executionId, { turn, text });
  }

  /** Calls `listener` with each delta of the execution until the returned function is called. */
  follow(executionId: string, listener: (delta: AgentDelta) => void): () => void {
    this.emitter.on(executionId, listener);
    return () => this.emitter.off(executionId, listener);
  }
}
