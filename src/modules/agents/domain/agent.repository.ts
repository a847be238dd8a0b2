import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Agent } from './agent';

export abstract class AgentRepository {
  abstract find(organizationId: string, id: string): Promise<Agent | null>;
  /** Which of these ids are agents of the organization. */
  abstract existing(organizationId: string, ids: string[]): Promise<string[]>;
  abstract list(organizationId: string, page: PageRequest, kind?: string): Promise<Page<Agent>>;
  abstract insert(agent: Agent): Promise<void>;
  abstract update(agent: Agent): Promise<void>;
  abstract delete(organizationId: string, id: string): Promise<boolean>;
  /** The organization's agents with `mcp.expose` true, oldest first, at most `limit`. */
  abstract exposed(organizationId: string, limit: number): Promise<Agent[]>;
  /** Names of the organization's agents whose kind comes from the plugin. */
  abstract namesUsingPlugin(organizationId: string, slug: string): Promise<string[]>;
  /**
   * Names of the organization's agents with a tool whose `key` is `value` (`{ "agent": "<id>" }`),
   * or starts with `value` and a dot when `prefix` (`{ "action": "transform.<any>" }`).
   */
  abstract namesWithTool(organizationId: string, key: string, value: string, prefix?: boolean): Promise<string[]>;
}
