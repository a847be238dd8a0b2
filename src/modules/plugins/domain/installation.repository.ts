import { UsageChecks } from '../../../shared/usage/usage-checks';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Installation } from './installation';

export abstract class InstallationRepository {
  abstract find(organizationId: string, slug: string): Promise<Installation | null>;
  abstract list(organizationId: string, page: PageRequest): Promise<Page<Installation>>;
  /** Installations whose slug starts with `prefix` (the connections of one plugin, `mcp.`), in creation order. */
  abstract listPrefixed(organizationId: string, prefix: string, page: PageRequest): Promise<Page<Installation>>;
  abstract countPrefixed(organizationId: string, prefix: string): Promise<number>;
  abstract findById(organizationId: string, id: string): Promise<Installation | null>;
  abstract installedSlugs(organizationId: string): Promise<string[]>;
  /** False when the organization already has this plugin (a concurrent install won). */
  abstract insert(installation: Installation, secretFields: string[]): Promise<boolean>;
  abstract update(installation: Installation, secretFields: string[]): Promise<void>;
  abstract delete(organizationId: string, slug: string): Promise<boolean>;
}

/** What uses a plugin: agents and workflows register their checks here; uninstall asks it. */
export class PluginUsage extends UsageChecks {}
