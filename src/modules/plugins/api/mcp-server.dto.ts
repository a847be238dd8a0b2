import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsIn, IsObject, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { Optional } from '../../../shared/http/optional.decorator';
import { REDACTED } from '../application/plugins.service';
import { Installation } from '../domain/installation';
import type { McpConnectionConfig } from '../catalog/mcp/mcp.plugin';

const HTTP_URL = /^https?:\/\//i;
const TRANSPORTS = ['streamable-http', 'sse'] as const;
const TRANSPORT_DESCRIPTION =
  '`streamable-http`, or `sse` for a server that only speaks the older HTTP+SSE transport (the URL is then its event stream)';
const URL_DESCRIPTION = "The server's Streamable HTTP endpoint; checked by the SSRF guard on every connection and redirect";
const HEADERS_DESCRIPTION =
  'Sent with every request to the server (e.g. `Authorization`); stored sealed like plugin secrets and never returned (names only, values shown as "********")';
const ALLOWED_DESCRIPTION = 'Only these of its tools become actions; every tool it lists when absent';

export class CreateMcpServerRequest {
  @ApiProperty({
    pattern: '^[a-z][a-z0-9-]{0,39}$',
    example: 'github',
    description: 'Names its actions: `mcp.<name>.<tool>`; cannot be changed',
  })
  @IsString()
  @Matches(/^[a-z][a-z0-9-]{0,39}$/, { message: 'name must be 1-40 lowercase letters, digits and dashes, starting with a letter' })
  name!: string;

  @ApiProperty({ maxLength: 2048, example: 'https://mcp.example.com/mcp', description: URL_DESCRIPTION })
  @IsString()
  @MaxLength(2048)
  @Matches(HTTP_URL, { message: 'url must be an http or https URL' })
  url!: string;

  @ApiPropertyOptional({ enum: TRANSPORTS, default: 'streamable-http', description: TRANSPORT_DESCRIPTION })
  @Optional()
  @IsIn(TRANSPORTS)
  transport?: (typeof TRANSPORTS)[number];

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' }, description: HEADERS_DESCRIPTION })
  @Optional()
  @IsObject()
  headers?: Record<string, string>;

  @ApiPropertyOptional({ type: [String], maxItems: 200, description: ALLOWED_DESCRIPTION })
  @Optional()
  @IsArray()
  @ArrayMaxSize(200)
  @IsString({ each: true })
  @MaxLength(128, { each: true })
  allowedTools?: string[];
}

export class UpdateMcpServerRequest {
  @ApiPropertyOptional({ maxLength: 2048, description: `${URL_DESCRIPTION}; a new URL needs its headers entered again` })
  @Optional()
  @IsString()
  @MaxLength(2048)
  @Matches(HTTP_URL, { message: 'url must be an http or https URL' })
  url?: string;

  @ApiPropertyOptional({ enum: TRANSPORTS, description: TRANSPORT_DESCRIPTION })
  @Optional()
  @IsIn(TRANSPORTS)
  transport?: (typeof TRANSPORTS)[number];

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string' },
    nullable: true,
    description: `${HEADERS_DESCRIPTION}; replaces them all, null removes them`,
  })
  @IsOptional()
  @IsObject()
  headers?: Record<string, string> | null;

  @ApiPropertyOptional({ type: [String], maxItems: 200, nullable: true, description: `${ALLOWED_DESCRIPTION}; null offers every tool` })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(200)
  @IsString({ each: true })
  @MaxLength(128, { each: true })
  allowedTools?: string[] | null;
}

export class McpToolResponse {
  @ApiProperty({ example: 'search_issues' }) name!: string;
  @ApiProperty({ example: 'mcp.github.search_issues', description: 'The action that calls it, in workflow steps and agent tools' })
  action!: string;
  @ApiProperty() description!: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) inputSchema!: object;
}

export class SkippedToolResponse {
  @ApiProperty() name!: string;
  @ApiProperty({ description: 'Why it is not offered' }) reason!: string;
}

export class McpServerResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ example: 'github' }) name!: string;
  @ApiProperty({ example: 'mcp.github', description: 'Its slug among the installed plugins (GET /api/plugins/:slug)' }) slug!: string;
  @ApiProperty() url!: string;
  @ApiProperty({ enum: TRANSPORTS }) transport!: string;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, description: 'Header names; values are never returned' })
  headers!: Record<string, string>;
  @ApiProperty({ type: [String], nullable: true }) allowedTools!: string[] | null;
  @ApiProperty({ type: [McpToolResponse], description: 'Its tools as last read (on connect, update and refresh)' })
  tools!: McpToolResponse[];
  @ApiProperty({ type: [SkippedToolResponse], description: 'Tools it lists that cannot be offered' }) skippedTools!: SkippedToolResponse[];
  @ApiProperty({ format: 'date-time' }) refreshedAt!: string;
  @ApiProperty({ format: 'uuid' }) createdBy!: string;
  @ApiProperty({ format: 'date-time' }) createdAt!: string;
  @ApiProperty({ format: 'date-time' }) updatedAt!: string;

  static of(installation: Installation): McpServerResponse {
    const config = installation.config as unknown as McpConnectionConfig;
    return {
      id: installation.id,
      name: installation.slug.slice('mcp.'.length),
      slug: installation.slug,
      url: config.url,
      transport: config.transport ?? 'streamable-http',
      headers: Object.fromEntries(Object.keys(config.headers ?? {}).map((name) => [name, REDACTED])),
      allowedTools: config.allowedTools ?? null,
      tools: config.tools.map((t) => ({
        name: t.name,
        action: `${installation.slug}.${t.name}`,
        description: t.description,
        inputSchema: t.inputSchema,
      })),
      skippedTools: config.skippedTools,
      refreshedAt: config.refreshedAt,
      createdBy: installation.installedBy,
      createdAt: installation.createdAt.toISOString(),
      updatedAt: installation.updatedAt.toISOString(),
    };
  }
}

export class McpServerPageResponse {
  @ApiProperty({ type: [McpServerResponse] }) data!: McpServerResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}
