import { ErrorCode, statusOf } from './error-catalog';
import { ErrorDetail } from './domain-error';

export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; status: number; details?: ErrorDetail[] };
}

export function envelope(code: ErrorCode, message: string, details?: ErrorDetail[]): ErrorEnvelope {
  return { error: { code, message, status: statusOf(code), ...(details?.length ? { details } : {}) } };
}
