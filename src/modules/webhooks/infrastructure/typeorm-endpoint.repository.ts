import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { In } from 'typeorm';
import { keysetPage } from '../../../database/keyset';
import { openSecrets, sealSecrets } from '../../../shared/crypto/rotating-secrets';
import { SecretBox } from '../../../shared/crypto/secret-box';
import { Page, PageRequest, toPage } from '../../../shared/pagination/cursor';
import { EndpointSubscription, WebhookEndpoint } from '../domain/endpoint';
import { EndpointRepository } from '../domain/webhook.repository';
import { WebhookEndpointRow } from './webhook.orm-entities';

/** Endpoints with their signing secrets sealed (AES-256-GCM, bound to the endpoint's id). */
@Injectable()
export class TypeOrmEndpointRepository extends EndpointRepository {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly box: SecretBox,
  ) {
    super();
  }

  private get rows() {
    return this.txHost.tx.getRepository(WebhookEndpointRow);
  }

  async insert(endpoint: WebhookEndpoint): Promise<void> {
    await this.rows.insert(this.toRow(endpoint));
  }

  async countForCreate(organizationId: string): Promise<number> {
    await this.txHost.tx.query(`SELECT pg_advisory_xact_lock(hashtext('webhook-endpoints:' || $1))`, [organizationId]);
    return this.rows.countBy({ organizationId });
  }

  async update(endpoint: WebhookEndpoint): Promise<void> {
    const { id, organizationId, ...rest } = this.toRow(endpoint);
    await this.rows.update({ id, organizationId }, rest);
  }

  async find(organizationId: string, id: string, options: { forUpdate?: boolean } = {}): Promise<WebhookEndpoint | null> {
    const row = await this.rows.findOne({
      where: { organizationId, id },
      ...(options.forUpdate ? { lock: { mode: 'pessimistic_write' as const } } : {}),
    });
    return row ? this.toDomain(row) : null;
  }

  async list(organizationId: string, page: PageRequest): Promise<Page<WebhookEndpoint>> {
    const qb = this.rows.createQueryBuilder('e').where('e.organizationId = :organizationId', { organizationId });
    return toPage(await keysetPage(qb, page).getMany(), page.limit, (row) => this.toDomain(row));
  }

  async delete(organizationId: string, id: string): Promise<boolean> {
    return ((await this.rows.delete({ organizationId, id })).affected ?? 0) > 0;
  }

  async withIds(ids: string[]): Promise<WebhookEndpoint[]> {
    if (!ids.length) return [];
    return (await this.rows.findBy({ id: In(ids) })).map((row) => this.toDomain(row));
  }

  async subscriptions(organizationIds: string[]): Promise<EndpointSubscription[]> {
    if (!organizationIds.length) return [];
    const rows = await this.txHost.tx.query<Array<{ id: string; organization_id: string; event_types: string[]; enabled: boolean }>>(
      `SELECT id, organization_id, event_types, enabled FROM webhook_endpoints WHERE organization_id = ANY($1::uuid[])`,
      [organizationIds],
    );
    return rows.map((r) => ({ id: r.id, organizationId: r.organization_id, eventTypes: r.event_types, enabled: r.enabled }));
  }

  async markFailing(id: string): Promise<Date | null> {
    const [row] = await this.txHost.tx.query<Array<{ failing_since: Date | null }>>(
      `UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, now()) WHERE id = $1 RETURNING failing_since`,
      [id],
    );
    return row?.failing_since ?? null;
  }

  async markHealthy(id: string): Promise<boolean> {
    const rows = await this.txHost.tx.query<unknown[]>(
      `UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL RETURNING id`,
      [id],
    );
    return rows.length > 0;
  }

  async disable(id: string, reason: string): Promise<boolean> {
    const rows = await this.txHost.tx.query<unknown[]>(
      `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, updated_at = now() WHERE id = $1 AND enabled RETURNING id`,
      [id, reason],
    );
    return rows.length > 0;
  }

  private toRow(endpoint: WebhookEndpoint): WebhookEndpointRow {
    return {
      id: endpoint.id,
      organizationId: endpoint.organizationId,
      url: endpoint.url,
      description: endpoint.description,
      eventTypes: [...endpoint.eventTypes],
      enabled: endpoint.enabled,
      sealedSecrets: sealSecrets(this.box, endpoint.secrets, `webhook:${endpoint.id}`),
      disabledReason: endpoint.disabledReason,
      failingSince: endpoint.failingSince,
      createdAt: endpoint.createdAt,
      updatedAt: endpoint.updatedAt,
    };
  }

  private toDomain(row: WebhookEndpointRow): WebhookEndpoint {
    const secrets = openSecrets(this.box, row.sealedSecrets, `webhook:${row.id}`);
    return WebhookEndpoint.rehydrate({
      id: row.id,
      organizationId: row.organizationId,
      url: row.url,
      description: row.description,
      eventTypes: row.eventTypes,
      enabled: row.enabled,
      secrets,
      disabledReason: row.disabledReason,
      failingSince: row.failingSince,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
    });
  }
}
