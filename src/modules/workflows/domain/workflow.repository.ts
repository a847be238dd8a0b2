import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { WorkflowDefinition } from './definition';
import { Workflow } from './workflow';

export interface WorkflowVersion {
  id: string;
  workflowId: string;
  version: number;
  definition: WorkflowDefinition;
  createdBy: string;
  createdAt: Date;
}

export abstract class WorkflowRepository {
  /** A workflow that is not deleted. */
  abstract find(organizationId: string, id: string): Promise<Workflow | null>;
  /** Whether the workflow ever existed in the organization (deleted ones keep their runs readable). */
  abstract existed(organizationId: string, id: string): Promise<boolean>;
  abstract list(organizationId: string, page: PageRequest): Promise<Page<Workflow>>;
  /** Inserts the workflow and its current version. */
  abstract insert(workflow: Workflow): Promise<void>;
  /** Records the workflow's new current version, made by `createdBy`. */
  abstract addVersion(workflow: Workflow, createdBy: string): Promise<void>;
  abstract versions(organizationId: string, id: string, page: PageRequest): Promise<Page<WorkflowVersion>>;
  abstract version(workflowId: string, version: number): Promise<WorkflowVersion | null>;
  abstract delete(organizationId: string, id: string): Promise<boolean>;
  /** Live workflows whose current version has `mcp.expose` true, oldest first, at most `limit`. */
  abstract exposed(organizationId: string, limit: number): Promise<Workflow[]>;
  /** Names of live workflows whose current version uses the agent. */
  abstract namesUsingAgent(organizationId: string, agentId: string): Promise<string[]>;
  /** Names of live workflows whose current version uses an action of the plugin. */
  abstract namesUsingPlugin(organizationId: string, slug: string): Promise<string[]>;
}
