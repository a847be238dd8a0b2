import { Injectable } from '@nestjs/common';
import { DomainError } from '../../../shared/errors/domain-error';
import { ExpressionFailure, ExpressionSandbox } from '../../../shared/expressions/expression-sandbox';
import { Failure } from '../../../shared/jobs/outcome';
import { ConcurrencyPolicy, WORKFLOW_LIMITS } from '../../workflows/domain/definition';
import { Run } from '../domain/run';
import { RunRepository } from '../domain/run.repository';
import { RunJobs } from './run-jobs';

/** Cancels a run with the reason (and the runs it started); false when it had ended meanwhile. */
export type CancelRun = (run: { id: string; organizationId: string; workflowId: string }, reason: Failure) => Promise<boolean>;

/** Largest result of a key expression, as JSON: the key's characters, quoted and escaped. */
const KEY_OUTPUT_BYTES = 8 * WORKFLOW_LIMITS.concurrencyKey;

/**
 * A workflow's `concurrency`: at most `limit` runs with one key hold a place (from their start
 * to their end). Places are counted in the database under a claim per key (`claimPlaces`), so
 * the limit holds across processes; a run's end hands its place over in its own transaction
 * (RunJobs), so a place is neither kept by an ended run nor lost by a crash.
 */
@Injectable()
export class RunConcurrency {
  constructor(
    private readonly sandbox: ExpressionSandbox,
    private readonly runs: RunRepository,
    private readonly jobs: RunJobs,
  ) {}

  /**
   * The run's key: the policy's expression over `{ input }`, as a string ('' without one). A
   * key that cannot be had refuses the run (VALIDATION_FAILED): with no key, no place.
   */
  async keyOf(organizationId: string, policy: ConcurrencyPolicy, input: unknown): Promise<string> {
    if (policy.key === undefined) return '';
    let value: unknown;
    try {
      value = await this.sandbox.evaluate(policy.key, { input }, { organizationId, maxOutputBytes: KEY_OUTPUT_BYTES });
    } catch (error) {
      if (!(error instanceof ExpressionFailure)) throw error;
      throw keyRefused(error.message);
    }
    if (value === null || value === undefined) throw keyRefused('it gave no value for this input');
    const key = typeof value === 'string' ? value : JSON.stringify(value);
    if (key.length > WORKFLOW_LIMITS.concurrencyKey)
      throw keyRefused(`it gave ${key.length} characters; at most ${WORKFLOW_LIMITS.concurrencyKey} are allowed`);
    return key;
  }

  /**
   * Just before a new run is recorded, in its transaction: it takes a free place of its key
   * (older runs waiting for one first), or, beyond the limit, cancels the oldest run holding
   * one (`cancelOldest`), or waits for a place on no job (`queue`, and `cancelNew`, whose run
   * the caller then cancels).
   */
  async place(run: Run, policy: ConcurrencyPolicy, cancel: CancelRun): Promise<Run> {
    const { key, limit } = run.concurrency!;
    await this.runs.claimPlaces(run.workflowId, key);
    let { free } = await this.jobs.admit(run.workflowId, key, limit);
    if (!free && policy.onLimit === 'cancelOldest') {
      const oldest = await this.runs.oldestHolder(run.workflowId, key);
      if (oldest && (await cancel({ ...oldest, workflowId: run.workflowId }, replacedBy(run)))) {
        ({ free } = await this.jobs.admit(run.workflowId, key, limit));
      }
    }
    if (free) return run;
    return { ...run, jobId: null, concurrency: { key, limit, waitsForPlace: true } };
  }
}

/** Why a run beyond the limit was canceled (`cancelNew`). */
export function overLimit({ key, limit }: { key: string; limit: number }): Failure {
  return {
    code: 'CONCURRENCY_LIMIT',
    message: `${limit} run(s) with the concurrency key '${key}' were in progress (limit ${limit}, onLimit cancelNew)`,
  };
}

/** Why the oldest run of a key was canceled (`cancelOldest`). */
function replacedBy(run: Run): Failure {
  const { key, limit } = run.concurrency!;
  return {
    code: 'CONCURRENCY_LIMIT',
    message: `Canceled for the newer run ${run.id} with the concurrency key '${key}' (limit ${limit}, onLimit cancelOldest)`,
  };
}

function keyRefused(reason: string): DomainError {
  return new DomainError('VALIDATION_FAILED', `The concurrency key could not be evaluated: ${reason}`, [
    { path: 'concurrency.key', message: reason },
  ]);
}
