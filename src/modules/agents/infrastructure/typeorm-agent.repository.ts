import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { In, QueryDeepPartialEntity } from 'typeorm';
import { keysetPage } from '../../../database/keyset';
import { Page, PageRequest, toPage } from '../../../shared/pagination/cursor';
import { Agent } from '../domain/agent';
import { AgentRepository } from '../domain/agent.repository';
import { AgentRow } from './agent.orm-entity';

@Injectable()
export class TypeOrmAgentRepository extends AgentRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {
    super();
  }

  private get rows() {
    return this.txHost.tx.getRepository(AgentRow);
  }

  async find(organizationId: string, id: string): Promise<Agent | null> {
    const row = await this.rows.findOneBy({ organizationId, id });
    return row ? toDomain(row) : null;
  }

  async existing(organizationId: string, ids: string[]): Promise<string[]> {
    if (!ids.length) return [];
    const rows = await this.rows.find({ where: { organizationId, id: In(ids) }, select: { id: true } });
    return rows.map((r) => r.id);
  }

  async list(organizationId: string, page: PageRequest, kind?: string): Promise<Page<Agent>> {
    const qb = this.rows.createQueryBuilder('a').where('a.organizationId = :organizationId', { organizationId });
    if (kind) qb.andWhere('a.kind = :kind', { kind });
    return toPage(await keysetPage(qb, page).getMany(), page.limit, toDomain);
  }

  async exposed(organizationId: string, limit: number): Promise<Agent[]> {
    const rows = await this.rows
      .createQueryBuilder('a')
      .where('a.organizationId = :organizationId', { organizationId })
      .andWhere(`a.mcp ->> 'expose' = 'true'`)
      .orderBy('a.createdAt', 'ASC')
      .addOrderBy('a.id', 'ASC')
      .limit(limit)
      .getMany();
    return rows.map(toDomain);
  }

  async insert(agent: Agent): Promise<void> {
    await this.rows.insert(toRow(agent));
  }

  async update(agent: Agent): Promise<void> {
    const { id, organizationId, ...rest } = toRow(agent);
    await this.rows.update({ id, organizationId }, rest);
  }

  async delete(organizationId: string, id: string): Promise<boolean> {
    return ((await this.rows.delete({ organizationId, id })).affected ?? 0) > 0;
  }

  async namesUsingPlugin(organizationId: string, slug: string): Promise<string[]> {
    const rows = await this.rows.find({ where: { organizationId, pluginSlug: slug }, select: { name: true }, order: { name: 'ASC' } });
    return rows.map((r) => r.name);
  }

  async namesWithTool(organizationId: string, key: string, value: string, prefix = false): Promise<string[]> {
    const rows: Array<{ name: string }> = await this.txHost.tx.query(
      `SELECT name FROM agents WHERE organization_id = $1 AND jsonb_typeof(config->'tools') = 'array'
         AND EXISTS (SELECT 1 FROM jsonb_array_elements(config->'tools') t
                     WHERE CASE WHEN $4 THEN starts_with(t->>$2, $3 || '.') ELSE t->>$2 = $3 END)
       ORDER BY name`,
      [organizationId, key, value, prefix],
    );
    return rows.map((r) => r.name);
  }
}

/** jsonb columns take any JSON; TypeORM's deep-partial type cannot express that. */
function toRow(agent: Agent): QueryDeepPartialEntity<AgentRow> & { id: string; organizationId: string } {
  const props = agent.toProps();
  return {
    ...props,
    pluginSlug: agent.pluginSlug,
    config: props.config as QueryDeepPartialEntity<Record<string, unknown>>,
    inputSchema: props.inputSchema as QueryDeepPartialEntity<Record<string, unknown>> | null,
    mcp: props.mcp as QueryDeepPartialEntity<{ expose: boolean; description?: string }> | null,
  };
}

function toDomain(row: AgentRow): Agent {
  const { pluginSlug: _slug, organization: _org, ...props } = row;
  return Agent.rehydrate(props);
}
