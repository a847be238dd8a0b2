import { Controller, Get, Req } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { Public } from '../../../shared/auth/access.decorators';

/** Where clients reach this service, as the request shows it (behind TRUST_PROXY, the proxy's forwarded scheme). */
export function originOf(req: Request): string {
  return `${req.protocol}://${req.get('host') ?? 'localhost'}`;
}

export function protectedResourceMetadataUrl(req: Request): string {
  return `${originOf(req)}/.well-known/oauth-protected-resource`;
}

export class ProtectedResourceMetadata {
  @ApiProperty({ example: 'https://platform.example.com/api/mcp' }) resource!: string;
  @ApiProperty({ type: [String], example: ['header'] }) bearer_methods_supported!: string[];
  @ApiProperty({ type: [String], description: 'None: the service issues its own tokens and keys; it has no OAuth authorization server' })
  authorization_servers!: string[];
  @ApiProperty({ type: [String] }) scopes_supported!: string[];
  @ApiProperty() resource_name!: string;
  @ApiProperty() resource_documentation!: string;
}

/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) of /api/mcp, which the MCP authorization
 * spec points clients at: a bearer in the Authorization header. There is no OAuth
 * authorization server of ours (`authorization_servers` is empty): clients are given an API
 * key (or an access token from login or SAML) and send it as the bearer.
 */
@ApiTags('mcp')
@Controller('.well-known/oauth-protected-resource')
export class ProtectedResourceController {
  @Get(['', 'api/mcp'])
  @Public()
  @ApiOperation({ summary: 'OAuth protected resource metadata (RFC 9728) of /api/mcp: bearer in the header; no authorization server' })
  @ApiOkResponse({ type: ProtectedResourceMetadata })
  metadata(@Req() req: Request): ProtectedResourceMetadata {
    const origin = originOf(req);
    return {
      resource: `${origin}/api/mcp`,
      bearer_methods_supported: ['header'],
      authorization_servers: [],
      scopes_supported: ['workflows:read', 'workflows:run', 'agents:read', 'agents:execute'],
      resource_name: 'The Platform (MCP)',
      resource_documentation: `${origin}/api/docs`,
    };
  }
}
