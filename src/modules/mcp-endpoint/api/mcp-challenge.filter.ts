import { ArgumentsHost, Catch } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AllExceptionsFilter } from '../../../shared/errors/all-exceptions.filter';
import { DomainError } from '../../../shared/errors/domain-error';
import { ERROR_CATALOG } from '../../../shared/errors/error-catalog';
import { protectedResourceMetadataUrl } from './protected-resource.controller';

/**
 * On /api/mcp, a 401 carries the challenge of the MCP authorization spec (RFC 9728 §5.1):
 * `WWW-Authenticate: Bearer resource_metadata="<origin>/.well-known/oauth-protected-resource"`,
 * so a client learns where the resource's metadata is. The body stays the service's envelope.
 */
@Catch()
export class McpChallengeFilter extends AllExceptionsFilter {
  override catch(exception: unknown, host: ArgumentsHost): void {
    if (exception instanceof DomainError && ERROR_CATALOG[exception.code].status === 401) {
      const http = host.switchToHttp();
      const url = protectedResourceMetadataUrl(http.getRequest<Request>());
      http.getResponse<Response>().setHeader('WWW-Authenticate', `Bearer resource_metadata="${url}"`);
    }
    super.catch(exception, host);
  }
}
