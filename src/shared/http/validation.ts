import { ValidationError, ValidationPipe } from '@nestjs/common';
import { DomainError, ErrorDetail } from '../errors/domain-error';

/** Flattens class-validator's tree into `details: [{ path, message }]`. */
export function toDetails(errors: ValidationError[], parent = ''): ErrorDetail[] {
  return errors.flatMap((error) => {
    const path = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((message) => ({ path, message }));
    return [...own, ...toDetails(error.children ?? [], path)];
  });
}

/**
 * Unknown fields are refused, not dropped: a body with `role` or `organizationId` where
 * none is expected is a 400, and nothing is written.
 */
export function validationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => new DomainError('VALIDATION_FAILED', 'The request is not valid', toDetails(errors)),
  });
}
