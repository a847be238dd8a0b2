import { Injectable, PipeTransform, ArgumentMetadata } from '@nestjs/common';
import { DomainError } from '../errors/domain-error';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Path ids are UUIDs; anything else is a validation failure naming the parameter. */
@Injectable()
export class UuidParam implements PipeTransform<string, string> {
  transform(value: string, metadata: ArgumentMetadata): string {
    if (!UUID.test(value)) {
      const path = metadata.data ?? 'id';
      throw new DomainError('VALIDATION_FAILED', `${path} must be a UUID`, [{ path, message: `${path} must be a UUID` }]);
    }
    return value.toLowerCase();
  }
}
