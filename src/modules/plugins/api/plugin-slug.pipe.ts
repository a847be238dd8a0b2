import { Injectable, PipeTransform } from '@nestjs/common';
import { DomainError } from '../../../shared/errors/domain-error';

const SLUG = /^(?:[a-z0-9][a-z0-9-]{0,63}|mcp\.[a-z][a-z0-9-]{0,39})$/;

/** Plugin slugs are short lowercase names (a connected MCP server's is `mcp.<name>`); anything else cannot name a plugin. */
@Injectable()
export class PluginSlug implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!SLUG.test(value))
      throw new DomainError('VALIDATION_FAILED', 'slug must be a plugin slug', [
        { path: 'slug', message: 'slug must be lowercase letters, digits and dashes' },
      ]);
    return value;
  }
}
