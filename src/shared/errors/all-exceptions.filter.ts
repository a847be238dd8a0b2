import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { isDatabaseUnavailable, isUnstorableValue } from './postgres-errors';
import { DomainError } from './domain-error';
import { ErrorCode } from './error-catalog';
import { envelope, ErrorEnvelope } from './error-envelope';

/** Nest's HTTP exceptions by status, for the few the framework or libraries throw. */
const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: 'VALIDATION_FAILED',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'NOT_FOUND',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMIT_EXCEEDED',
  503: 'SERVICE_UNAVAILABLE',
};

const RETRY_AFTER_SECONDS = '5';

/**
 * The one place an error becomes a response. Every layer's failure ends here and leaves as
 * `{ "error": { code, message, status } }`; anything unforeseen is a 500 that is logged with
 * the request id and reveals nothing.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const res = ctx.getResponse<Response>();
    const req = ctx.getRequest<Request & { id?: string }>();
    const { body, headers } = this.toEnvelope(exception, req);
    if (res.headersSent) return;
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    res.status(body.error.status).json(body);
  }

  private toEnvelope(exception: unknown, req: Request & { id?: string }): { body: ErrorEnvelope; headers: Record<string, string> } {
    if (exception instanceof DomainError) {
      return { body: envelope(exception.code, exception.message, exception.details), headers: exception.headers ?? {} };
    }
    const parserError = bodyParserError(exception);
    if (parserError) return { body: parserError, headers: {} };
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const code = CODE_BY_STATUS[status];
      if (code) {
        const message = code === 'NOT_FOUND' ? `No route ${req.method} ${req.path}` : exception.message;
        const headers: Record<string, string> = status === 503 || status === 429 ? { 'Retry-After': RETRY_AFTER_SECONDS } : {};
        return { body: envelope(code, message), headers };
      }
    }
    if (isUnstorableValue(exception)) {
      // A bad value that reached the database: the request's fault, but an edge check is missing.
      this.logger.warn({ requestId: req.id, err: exception }, `A value the database refuses on ${req.method} ${req.path}`);
      return {
        body: envelope(
          'VALIDATION_FAILED',
          'The request holds a value the database cannot store (a NUL character or a lone surrogate in text, or text that is not of its type)',
        ),
        headers: {},
      };
    }
    if (isDatabaseUnavailable(exception)) {
      this.logger.warn({ requestId: req.id, err: exception }, 'Database unavailable');
      return {
        body: envelope('SERVICE_UNAVAILABLE', 'The database is unavailable; retry shortly'),
        headers: { 'Retry-After': RETRY_AFTER_SECONDS },
      };
    }
    this.logger.error({ requestId: req.id, err: exception }, `Unhandled error on ${req.method} ${req.path}`);
    return { body: envelope('INTERNAL_ERROR', `An unexpected error occurred (request id ${req.id ?? 'unknown'})`), headers: {} };
  }
}

/**
 * Errors raised by the body parsers (malformed, too large, bad charset): as a route's reader
 * throws them, or as Nest hands on those of a middleware, wrapped in an HttpException.
 */
function bodyParserError(exception: unknown): ErrorEnvelope | null {
  const raised = exception instanceof HttpException && exception.cause ? exception.cause : exception;
  const { type, limit } = (raised ?? {}) as { type?: unknown; limit?: unknown };
  switch (type) {
    case 'entity.parse.failed':
      return envelope('VALIDATION_FAILED', 'The body is not valid JSON', [{ path: '', message: 'malformed JSON' }]);
    case 'entity.too.large':
      // The route's limit (raw-body names it): 1 MiB, 2 MiB where the body carries an input.
      return envelope('PAYLOAD_TOO_LARGE', `The body is larger than ${typeof limit === 'number' ? mebibytes(limit) : 'the limit'}`);
    case 'charset.unsupported':
    case 'encoding.unsupported':
      return envelope('UNSUPPORTED_MEDIA_TYPE', 'The body encoding or charset is not supported');
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return envelope('VALIDATION_FAILED', 'The body could not be read');
    default:
      return null;
  }
}

/** 1048576 -> "1 MiB"; a limit that is not whole mebibytes in bytes. */
function mebibytes(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}
