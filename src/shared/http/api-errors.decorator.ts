import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiResponse } from '@nestjs/swagger';
import { ERROR_CATALOG, ErrorCode } from '../errors/error-catalog';

export class ErrorDetailDto {
  @ApiProperty({ example: 'email' }) path!: string;
  @ApiProperty({ example: 'email must be an email' }) message!: string;
}

export class ErrorBodyDto {
  @ApiProperty({ enum: Object.keys(ERROR_CATALOG), example: 'PLUGIN_NOT_FOUND' }) code!: string;
  @ApiProperty({ example: "Plugin 'slack' is not installed" }) message!: string;
  @ApiProperty({ example: 404 }) status!: number;
  @ApiPropertyOptional({ type: [ErrorDetailDto] }) details?: ErrorDetailDto[];
}

/** The one error shape, `{ "error": { code, message, status } }`. */
export class ErrorEnvelopeDto {
  @ApiProperty({ type: ErrorBodyDto }) error!: ErrorBodyDto;
}

/** Errors every authenticated route can answer. */
const AUTHENTICATED: ErrorCode[] = ['UNAUTHORIZED', 'TOKEN_EXPIRED', 'RATE_LIMIT_EXCEEDED', 'SERVICE_UNAVAILABLE', 'INTERNAL_ERROR'];

/**
 * Documents the error responses of a route, grouped by status, each with the envelope schema
 * and the codes it may carry.
 */
export function ApiErrors(...codes: ErrorCode[]) {
  return documentErrors([...codes, ...AUTHENTICATED]);
}

/** For public routes: no token errors. */
export function ApiPublicErrors(...codes: ErrorCode[]) {
  return documentErrors([...codes, 'SERVICE_UNAVAILABLE', 'INTERNAL_ERROR']);
}

function documentErrors(codes: ErrorCode[]) {
  const byStatus = new Map<number, Set<ErrorCode>>();
  for (const code of codes) {
    const status = ERROR_CATALOG[code].status;
    byStatus.set(status, (byStatus.get(status) ?? new Set()).add(code));
  }
  return applyDecorators(
    ...[...byStatus].map(([status, set]) =>
      ApiResponse({
        status,
        description: `Error envelope; code ${[...set].join(' | ')}`,
        type: ErrorEnvelopeDto,
        // Each code's example is written once, under components.examples (errorExamples()), and
        // referenced here: a Reference Object, which the decorator's type does not name.
        examples: Object.fromEntries([...set].map((code) => [code, { $ref: `#/components/examples/${code}` } as never])),
      }),
    ),
  );
}

/** The example of each code's answer, for components.examples: its own code and status, the catalog's words as the message. */
export function errorExamples(): Record<ErrorCode, { summary: string; value: { error: ErrorBodyDto } }> {
  const examples = {} as Record<ErrorCode, { summary: string; value: { error: ErrorBodyDto } }>;
  for (const [code, { status, when }] of Object.entries(ERROR_CATALOG) as Array<[ErrorCode, { status: number; when: string }]>) {
    const error: ErrorBodyDto = { code, message: when.charAt(0).toUpperCase() + when.slice(1), status };
    if (code === 'VALIDATION_FAILED') error.details = [{ path: 'email', message: 'email must be an email' }];
    examples[code] = { summary: when, value: { error } };
  }
  return examples;
}
