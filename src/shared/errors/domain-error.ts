import { ErrorCode } from './error-catalog';

export interface ErrorDetail {
  path: string;
  message: string;
}

/**
 * An expected failure with a stable code from the catalog. Services throw these; the
 * exception filter turns them into the envelope. `headers` carries e.g. `Retry-After`.
 */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}
