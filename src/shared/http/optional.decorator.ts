import { ValidateIf } from 'class-validator';

/**
 * An optional field that may be left out but not sent as null: unlike class-validator's
 * IsOptional (which skips null too), a null is validated like any value, and the field's own
 * rules refuse it with 400, instead of letting it reach a NOT NULL column as a 500.
 */
export const Optional = (): PropertyDecorator => ValidateIf((_object, value) => value !== undefined);

/** An optional field that may also be sent as null (clearing it): only other values are validated. */
export const OptionalOrNull = (): PropertyDecorator => ValidateIf((_object, value) => value !== undefined && value !== null);
