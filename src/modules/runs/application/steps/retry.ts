import { Outcome } from '../../../../shared/jobs/outcome';
import { isRetryable } from '../../../plugins/application/capability-runner';
import { RetryPolicy } from '../../../workflows/domain/definition';

const DEFAULT_BACKOFF_MS = 1000;

/**
 * The wait before another attempt of a failed one (0: at once), or null when it is not tried
 * again: its attempts are used up, or its error is not one the policy retries (`retryOn`, or
 * by default those that may pass on another try).
 */
export function retryWait(
  retry: RetryPolicy | undefined,
  outcome: Exclude<Outcome, { status: 'succeeded' }>,
  attempt: number,
  maxAttempts: number,
): number | null {
  if (attempt >= maxAttempts || outcome.status === 'canceled') return null;
  if (retry?.retryOn ? !retry.retryOn.includes(outcome.error.code) : !isRetryable(outcome)) return null;
  const base = retry?.backoffMs ?? DEFAULT_BACKOFF_MS;
  const wait = retry?.backoff === 'fixed' ? base : base * 2 ** (attempt - 1);
  return Math.min(wait, retry?.maxBackoffMs ?? Number.MAX_SAFE_INTEGER);
}
