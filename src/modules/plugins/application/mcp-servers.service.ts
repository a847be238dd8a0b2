import { AuditTrail, changedFields } from '../../../shared/audit/audit-trail';
import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { EventOutbox } from '../../../shared/events/event-outbox';
import { schemaProblems } from '../../../shared/json-schema/json-schema.validator';
import { storable } from '../../../shared/json/storable';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Installation } from '../domain/installation';
import { InstallationRepository } from '../domain/installation.repository';
import { ExecutionError, Plugin } from '../domain/plugin';
import { PluginRegistry } from './plugin-registry';
import { assertSecretsFollow, audited, PluginsService } from './plugins.service';

/** The most MCP servers one organization connects. */
export const MCP_SERVER_LIMIT = 50;
/** Longest the connect handshake and tools/list may take when a server is added or refreshed. */
const READ_TIMEOUT_MS = 15_000;
const PREFIX = 'mcp.';

/** What an admin enters for a server; `headers: null` (on update) removes them. */
export interface McpServerInput {
  url?: string;
  transport?: 'streamable-http' | 'sse';
  headers?: Record<string, string> | null;
  allowedTools?: string[] | null;
}

export function mcpServerNotFound(): DomainError {
  return new DomainError('MCP_SERVER_NOT_FOUND', 'No such MCP server');
}

/**
 * Remote MCP servers connected to an organization. Each is an installation `mcp.<name>` of the
 * `mcp` plugin, so the plugin endpoints list, show and uninstall it too, its headers are sealed
 * like any plugin secret, and a server whose tools a workflow or agent uses cannot go. Its
 * tools are read (tools/list, through the SSRF guard) when it is added, changed or refreshed,
 * and stored: steps and agents are checked against what is stored.
 */
@Injectable()
export class McpServersService {
  constructor(
    private readonly registry: PluginRegistry,
    private readonly installations: InstallationRepository,
    private readonly plugins: PluginsService,
    private readonly events: EventOutbox,
    private readonly audit: AuditTrail,
  ) {}

  /** The tools are read before the transaction opens: no connection is held while a server answers. */
  async create(caller: Principal, name: string, input: McpServerInput): Promise<Installation> {
    const slug = `${PREFIX}${name}`;
    if (await this.installations.find(caller.organizationId, slug)) throw nameTaken(name);
    if ((await this.installations.countPrefixed(caller.organizationId, PREFIX)) >= MCP_SERVER_LIMIT)
      throw new DomainError('MCP_SERVER_LIMIT_REACHED', `An organization connects at most ${MCP_SERVER_LIMIT} MCP servers`);
    return this.insert(caller, slug, await this.read(entered({ ...input })));
  }

  @Transactional()
  private async insert(caller: Principal, slug: string, config: Record<string, unknown>): Promise<Installation> {
    const installation = Installation.create({
      organizationId: caller.organizationId,
      slug,
      version: this.plugin.manifest.version,
      config,
      installedBy: caller.userId,
    });
    if (!(await this.installations.insert(installation, this.plugin.manifest.secretFields))) throw nameTaken(slug.slice(PREFIX.length));
    await this.events.publish([
      { organizationId: caller.organizationId, type: 'plugin.installed', data: { slug, version: this.plugin.manifest.version } },
    ]);
    await this.audit.record({ ...audited(installation, 'mcp_server.created'), changes: { after: this.described(config) } });
    return installation;
  }

  list(caller: Principal, page: PageRequest): Promise<Page<Installation>> {
    return this.installations.listPrefixed(caller.organizationId, PREFIX, page);
  }

  async get(organizationId: string, id: string): Promise<Installation> {
    const installation = await this.installations.findById(organizationId, id);
    if (!installation?.slug.startsWith(PREFIX)) throw mcpServerNotFound();
    return installation;
  }

  /** Given fields replace, `null` removes; a new URL needs its headers entered again. The tools are read again. */
  async update(caller: Principal, id: string, patch: McpServerInput): Promise<Installation> {
    const installation = await this.get(caller.organizationId, id);
    const before = installation.config;
    const kept = Object.fromEntries(Object.entries({ ...patch }).filter(([, v]) => v !== undefined));
    const merged = Object.fromEntries(Object.entries({ ...entered(before), ...kept }).filter(([, v]) => v !== null));
    assertSecretsFollow(this.plugin, before, merged, kept);
    const read = await this.read(merged);
    return this.stored(installation, before, read);
  }

  @Transactional()
  private async stored(installation: Installation, before: Record<string, unknown>, config: Record<string, unknown>): Promise<Installation> {
    installation.reconfigure(config);
    await this.installations.update(installation, this.plugin.manifest.secretFields);
    await this.audit.record({
      ...audited(installation, 'mcp_server.updated'),
      changes: changedFields(this.described(before), this.described(config)),
    });
    return installation;
  }

  /** A server's config as the audit log shows it: its entered fields, secrets masked, not the tools it lists. */
  private described(config: Record<string, unknown>): Record<string, unknown> {
    return PluginsService.redact(this.plugin, entered(config));
  }

  /** Reads the server's tools again and stores them. */
  async refresh(caller: Principal, id: string): Promise<Installation> {
    const installation = await this.get(caller.organizationId, id);
    installation.reconfigure(await this.read(entered(installation.config)));
    await this.installations.update(installation, this.plugin.manifest.secretFields);
    return installation;
  }

  /** As uninstalling `mcp.<name>`: refused while a workflow or agent uses one of its tools. */
  async delete(caller: Principal, id: string): Promise<void> {
    const installation = await this.get(caller.organizationId, id);
    await this.plugins.uninstall(caller, installation.slug, 'mcp_server.deleted');
  }

  private get plugin(): Plugin {
    return this.registry.find('mcp')!;
  }

  /**
   * The config to store: the entered fields with the tools the server lists now. A URL the
   * SSRF guard refuses is a validation failure of `url`; a server that cannot be read, 502.
   */
  private async read(config: Record<string, unknown>): Promise<Record<string, unknown>> {
    const problems = schemaProblems(this.plugin.manifest.configSchema, config, 'server').map((p) => ({
      path: p.path.replace(/^server\./, ''),
      message: p.message.replace(/^server\./, ''),
    }));
    if (problems.length) throw new DomainError('VALIDATION_FAILED', 'The MCP server is not valid', problems);
    try {
      // The tools as the server describes them, as jsonb can hold them (no lone surrogate, no NUL).
      return storable(await this.plugin.connections!.read(config, READ_TIMEOUT_MS));
    } catch (error) {
      if (!(error instanceof ExecutionError)) throw error;
      if (error.code === 'OUTBOUND_REFUSED')
        throw new DomainError('VALIDATION_FAILED', `The MCP server's URL is not allowed: ${error.message}`, [
          { path: 'url', message: error.message },
        ]);
      throw new DomainError('MCP_SERVER_UNREACHABLE', `The MCP server's tools could not be read: ${error.message}`);
    }
  }
}

/** The fields an admin enters, without what was read from the server. */
function entered(config: Record<string, unknown>): Record<string, unknown> {
  const { url, transport, headers, allowedTools } = config;
  return Object.fromEntries(Object.entries({ url, transport, headers, allowedTools }).filter(([, v]) => v !== undefined));
}

function nameTaken(name: string): DomainError {
  return new DomainError('MCP_SERVER_NAME_TAKEN', `An MCP server named '${name}' is already connected`);
}
