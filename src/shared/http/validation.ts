import { ValidationError, ValidationPipe } from '@nestjs/common';
import { DomainError, ErrorDetail } from '../errors/domain-error';

/**
 * Flattens class-validator's tree into `details: [{ path, message }]`. A required field that
 * is missing gets one detail, `<path> is required`, instead of every rule its absent value
 * breaks ("must be an email", "must be shorter than ..."). Optional fields never get here
 * undefined: their rules are skipped.
 */
export function toDetails(errors: ValidationError[], parent = ''): ErrorDetail[] {
  return errors.flatMap((error) => {
    const path = parent ? `${parent}.${error.property}` : error.property;
    if (isMissing(error)) return [{ path, message: `${path} is required` }];
    const own = Object.values(error.constraints ?? {}).map((message) => ({ path, message }));
    return [...own, ...toDetails(error.children ?? [], path)];
  });
}

/** A property of the object that was not sent at all (the pipe keeps `value` for this test only). */
function isMissing(error: ValidationError): boolean {
  return error.property !== '' && 'value' in error && error.value === undefined && !error.constraints?.whitelistValidation;
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
    // The value is kept so that a missing field can be told apart; it never leaves toDetails.
    validationError: { target: false, value: true },
    exceptionFactory: (errors) => new DomainError('VALIDATION_FAILED', 'The request is not valid', toDetails(errors)),
  });
}
