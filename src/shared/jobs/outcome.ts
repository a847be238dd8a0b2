/** Why something did not succeed, as the API shows it under `error`. */
export interface Failure {
  code: string;
  message: string;
}

/** How an attempt, a step or a durable job ended. */
export type Outcome = { status: 'succeeded'; output: unknown } | { status: 'failed' | 'timed_out' | 'canceled'; error: Failure };

/** The one failure of whatever a cancel stopped: an execution, a run, its steps, a plugin call. */
export const CANCELED: Failure = { code: 'CANCELED', message: 'Canceled before it finished' };

export function failed(code: string, message: string): Outcome {
  return { status: 'failed', error: { code, message } };
}

export function canceled(): Outcome {
  return { status: 'canceled', error: CANCELED };
}
