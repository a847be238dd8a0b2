import { randomUUID } from 'node:crypto';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Workflow, WorkflowProps } from './workflow';
import { WorkflowRepository, WorkflowVersion } from './workflow.repository';

/** For a method no unit spec has needed yet: the spec that does fakes it here. */
function notFaked(method: string): never {
  throw new Error(`${method} is not faked yet`);
}

/**
 * Workflows and their versions in memory, for unit specs. Like the Postgres adapter it keeps
 * copies, not the caller's objects; lists come newest first, in one page; `delete` only marks
 * a workflow deleted (`existed` still sees it). `namesUsingAgent` and `namesUsingPlugin` are
 * not faked yet.
 */
export class InMemoryWorkflowRepository extends WorkflowRepository {
  private readonly rows = new Map<string, WorkflowProps>();
  private readonly deleted = new Set<string>();
  /** By `<workflowId>:<version>`. */
  private readonly versionRows = new Map<string, WorkflowVersion>();

  /** Test setup: stores the workflow and its current version as they are. */
  add(workflow: Workflow): Workflow {
    const props = workflow.toProps();
    this.rows.set(props.id, props);
    this.addVersionOf(props, props.createdBy);
    return workflow;
  }

  async find(organizationId: string, id: string): Promise<Workflow | null> {
    const props = this.rows.get(id);
    return props && props.organizationId === organizationId && !this.deleted.has(id) ? Workflow.rehydrate(props) : null;
  }

  async existed(organizationId: string, id: string): Promise<boolean> {
    return this.rows.get(id)?.organizationId === organizationId;
  }

  async list(organizationId: string, page: PageRequest): Promise<Page<Workflow>> {
    const live = [...this.rows.values()]
      .filter((p) => p.organizationId === organizationId && !this.deleted.has(p.id))
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
    return { data: live.slice(0, page.limit).map((p) => Workflow.rehydrate(p)), nextCursor: null };
  }

  async exposed(organizationId: string, limit: number): Promise<Workflow[]> {
    return [...this.rows.values()]
      .filter((p) => p.organizationId === organizationId && !this.deleted.has(p.id) && p.definition.mcp?.expose === true)
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
      .slice(0, limit)
      .map((p) => Workflow.rehydrate(p));
  }

  async insert(workflow: Workflow): Promise<void> {
    if (this.rows.has(workflow.id)) throw new Error(`duplicate workflow ${workflow.id}`);
    this.add(workflow);
  }

  async addVersion(workflow: Workflow, createdBy: string): Promise<void> {
    const props = workflow.toProps();
    if (!this.rows.has(props.id)) return;
    this.rows.set(props.id, props);
    this.addVersionOf(props, createdBy);
  }

  async versions(organizationId: string, id: string, page: PageRequest): Promise<Page<WorkflowVersion>> {
    if (!(await this.existed(organizationId, id))) return { data: [], nextCursor: null };
    const newestFirst = [...this.versionRows.values()].filter((v) => v.workflowId === id).reverse();
    return { data: newestFirst.slice(0, page.limit), nextCursor: null };
  }

  async version(workflowId: string, version: number): Promise<WorkflowVersion | null> {
    return this.versionRows.get(`${workflowId}:${version}`) ?? null;
  }

  async delete(organizationId: string, id: string): Promise<boolean> {
    if (!(await this.find(organizationId, id))) return false;
    this.deleted.add(id);
    return true;
  }

  async namesUsingAgent(): Promise<string[]> {
    notFaked('namesUsingAgent');
  }

  async namesUsingPlugin(): Promise<string[]> {
    notFaked('namesUsingPlugin');
  }

  private addVersionOf(props: WorkflowProps, createdBy: string): void {
    const { id: workflowId, version, definition } = props;
    this.versionRows.set(`${workflowId}:${version}`, {
      id: randomUUID(),
      workflowId,
      version,
      definition,
      createdBy,
      createdAt: new Date(),
    });
  }
}
