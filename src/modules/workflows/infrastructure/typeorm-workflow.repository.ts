import { randomUUID } from 'node:crypto';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { IsNull, QueryDeepPartialEntity } from 'typeorm';
import { keysetPage } from '../../../database/keyset';
import { Page, PageRequest, toPage } from '../../../shared/pagination/cursor';
import { WorkflowDefinition } from '../domain/definition';
import { Workflow } from '../domain/workflow';
import { WorkflowRepository, WorkflowVersion } from '../domain/workflow.repository';
import { WorkflowRow, WorkflowVersionRow } from './workflow.orm-entities';

@Injectable()
export class TypeOrmWorkflowRepository extends WorkflowRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {
    super();
  }

  private get workflows() {
    return this.txHost.tx.getRepository(WorkflowRow);
  }

  private get versionRows() {
    return this.txHost.tx.getRepository(WorkflowVersionRow);
  }

  async find(organizationId: string, id: string): Promise<Workflow | null> {
    const row = await this.workflows.findOneBy({ organizationId, id, deletedAt: IsNull() });
    if (!row) return null;
    const version = await this.version(row.id, row.version);
    return version ? toDomain(row, version.definition) : null;
  }

  async existed(organizationId: string, id: string): Promise<boolean> {
    return this.workflows.existsBy({ organizationId, id });
  }

  async list(organizationId: string, page: PageRequest): Promise<Page<Workflow>> {
    const qb = this.workflows
      .createQueryBuilder('w')
      .where('w.organizationId = :organizationId', { organizationId })
      .andWhere('w.deletedAt IS NULL');
    const rows = await keysetPage(qb, page).getMany();
    const definitions = new Map<string, WorkflowDefinition>();
    if (rows.length) {
      const versions = await this.versionRows
        .createQueryBuilder('v')
        .where('(v.workflowId, v.version) IN (' + rows.map((_, i) => `(:w${i}, :v${i})`).join(', ') + ')')
        .setParameters(
          Object.fromEntries(
            rows.flatMap((r, i) => [
              [`w${i}`, r.id],
              [`v${i}`, r.version],
            ]),
          ),
        )
        .getMany();
      for (const v of versions) definitions.set(v.workflowId, v.definition as unknown as WorkflowDefinition);
    }
    return toPage(rows, page.limit, (row) => toDomain(row, definitions.get(row.id)!));
  }

  async exposed(organizationId: string, limit: number): Promise<Workflow[]> {
    const rows: Array<{ id: string; version: number; created_by: string; created_at: Date; updated_at: Date; definition: WorkflowDefinition }> =
      await this.txHost.tx.query(
        `SELECT w.id, w.version, w.created_by, w.created_at, w.updated_at, v.definition
         FROM workflows w JOIN workflow_versions v ON v.workflow_id = w.id AND v.version = w.version
         WHERE w.organization_id = $1 AND w.deleted_at IS NULL AND v.definition -> 'mcp' ->> 'expose' = 'true'
         ORDER BY w.created_at, w.id LIMIT $2`,
        [organizationId, limit],
      );
    return rows.map((r) =>
      Workflow.rehydrate({
        id: r.id,
        organizationId,
        definition: r.definition,
        version: r.version,
        createdBy: r.created_by,
        createdAt: new Date(r.created_at),
        updatedAt: new Date(r.updated_at),
      }),
    );
  }

  async insert(workflow: Workflow): Promise<void> {
    const p = workflow.toProps();
    await this.workflows.insert({
      id: p.id,
      organizationId: p.organizationId,
      name: p.definition.name,
      version: p.version,
      createdBy: p.createdBy,
      createdAt: p.createdAt,
      updatedAt: p.updatedAt,
      deletedAt: null,
    });
    await this.insertVersion(workflow, p.createdBy);
  }

  async addVersion(workflow: Workflow, createdBy: string): Promise<void> {
    const p = workflow.toProps();
    await this.workflows.update(
      { id: p.id, organizationId: p.organizationId },
      { name: p.definition.name, version: p.version, updatedAt: p.updatedAt },
    );
    await this.insertVersion(workflow, createdBy);
  }

  async versions(organizationId: string, id: string, page: PageRequest): Promise<Page<WorkflowVersion>> {
    const qb = this.versionRows
      .createQueryBuilder('v')
      .innerJoin(WorkflowRow, 'w', 'w.id = v.workflowId')
      .where('w.organizationId = :organizationId AND w.id = :id', { organizationId, id });
    return toPage(await keysetPage(qb, page).getMany(), page.limit, toVersion);
  }

  async version(workflowId: string, version: number): Promise<WorkflowVersion | null> {
    const row = await this.versionRows.findOneBy({ workflowId, version });
    return row ? toVersion(row) : null;
  }

  async delete(organizationId: string, id: string): Promise<boolean> {
    const result = await this.workflows.update({ organizationId, id, deletedAt: IsNull() }, { deletedAt: new Date() });
    return (result.affected ?? 0) > 0;
  }

  async namesUsingAgent(organizationId: string, agentId: string): Promise<string[]> {
    return this.namesWhere(`v.definition->'steps' @> jsonb_build_array(jsonb_build_object('agent', $2::text))`, [organizationId, agentId]);
  }

  async namesUsingPlugin(organizationId: string, slug: string): Promise<string[]> {
    return this.namesWhere(
      `EXISTS (SELECT 1 FROM jsonb_array_elements(v.definition->'steps') s WHERE starts_with(s->>'action', $2 || '.'))`,
      [organizationId, slug],
    );
  }

  private async namesWhere(condition: string, params: unknown[]): Promise<string[]> {
    const rows = await this.txHost.tx.query<Array<{ name: string }>>(
      `SELECT w.name FROM workflows w JOIN workflow_versions v ON v.workflow_id = w.id AND v.version = w.version
       WHERE w.organization_id = $1 AND w.deleted_at IS NULL AND ${condition} ORDER BY w.name`,
      params,
    );
    return rows.map((r) => r.name);
  }

  private async insertVersion(workflow: Workflow, createdBy: string): Promise<void> {
    const p = workflow.toProps();
    await this.versionRows.insert({
      id: randomUUID(),
      workflowId: p.id,
      version: p.version,
      definition: p.definition as unknown as QueryDeepPartialEntity<Record<string, unknown>>,
      createdBy,
      createdAt: p.updatedAt,
    });
  }
}

function toDomain(row: WorkflowRow, definition: WorkflowDefinition): Workflow {
  return Workflow.rehydrate({
    id: row.id,
    organizationId: row.organizationId,
    definition,
    version: row.version,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  });
}

function toVersion(row: WorkflowVersionRow): WorkflowVersion {
  return {
    id: row.id,
    workflowId: row.workflowId,
    version: row.version,
    definition: row.definition as unknown as WorkflowDefinition,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
  };
}
