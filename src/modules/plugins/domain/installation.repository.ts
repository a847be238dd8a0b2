import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Installation } from './installation';

export abstract class InstallationRepository {
  abstract find(organizationId: string, slug: string): Promise<Installation | null>;
  abstract list(organizationId: string, page: PageRequest): Promise<Page<Installation>>;
  abstract installedSlugs(organizationId: string): Promise<string[]>;
  /** False when the organization already has this plugin (a concurrent install won). */
  abstract insert(installation: Installation, secretFields: string[]): Promise<boolean>;
  abstract update(installation: Installation, secretFields: string[]): Promise<void>;
  abstract delete(organizationId: string, slug: string): Promise<boolean>;
}

/**
 * Modules whose resources use plugins (agents, workflows) provide one of these; uninstall
 * is refused while any of them names a user of the plugin.
 */
export abstract class PluginUsage {
  abstract usersOf(organizationId: string, slug: string): Promise<string[]>;
}
export const PLUGIN_USAGE = Symbol('PLUGIN_USAGE');
