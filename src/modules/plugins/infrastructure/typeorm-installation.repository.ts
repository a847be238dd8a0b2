import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { keysetPage } from '../../../database/keyset';
import { SecretBox } from '../../../shared/crypto/secret-box';
import { Page, PageRequest, toPage } from '../../../shared/pagination/cursor';
import { Installation } from '../domain/installation';
import { InstallationRepository } from '../domain/installation.repository';
import { QueryDeepPartialEntity } from 'typeorm';
import { InstallationRow } from './installation.orm-entity';

/** Splits secret fields off the config and seals them; the row never holds one in clear. */
@Injectable()
export class TypeOrmInstallationRepository extends InstallationRepository {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly box: SecretBox,
  ) {
    super();
  }

  private get rows() {
    return this.txHost.tx.getRepository(InstallationRow);
  }

  async find(organizationId: string, slug: string): Promise<Installation | null> {
    const row = await this.rows.findOneBy({ organizationId, slug });
    return row ? this.toDomain(row) : null;
  }

  async list(organizationId: string, page: PageRequest): Promise<Page<Installation>> {
    const qb = this.rows.createQueryBuilder('i').where('i.organizationId = :organizationId', { organizationId });
    const rows = await keysetPage(qb, page).getMany();
    return toPage(rows, page.limit, (row) => this.toDomain(row));
  }

  async listPrefixed(organizationId: string, prefix: string, page: PageRequest): Promise<Page<Installation>> {
    const qb = this.rows
      .createQueryBuilder('i')
      .where('i.organizationId = :organizationId AND starts_with(i.slug, :prefix)', { organizationId, prefix });
    const rows = await keysetPage(qb, page).getMany();
    return toPage(rows, page.limit, (row) => this.toDomain(row));
  }

  countPrefixed(organizationId: string, prefix: string): Promise<number> {
    return this.rows
      .createQueryBuilder('i')
      .where('i.organizationId = :organizationId AND starts_with(i.slug, :prefix)', { organizationId, prefix })
      .getCount();
  }

  async findById(organizationId: string, id: string): Promise<Installation | null> {
    const row = await this.rows.findOneBy({ organizationId, id });
    return row ? this.toDomain(row) : null;
  }

  async installedSlugs(organizationId: string): Promise<string[]> {
    const rows = await this.rows.find({ where: { organizationId }, select: { slug: true } });
    return rows.map((r) => r.slug);
  }

  /** ON CONFLICT DO NOTHING rather than a caught violation: the caller's transaction stays usable. */
  async insert(installation: Installation, secretFields: string[]): Promise<boolean> {
    const result = await this.rows
      .createQueryBuilder()
      .insert()
      .values(this.toRow(installation, secretFields))
      .orIgnore()
      .returning('id')
      .execute();
    return (result.raw as unknown[]).length > 0;
  }

  async update(installation: Installation, secretFields: string[]): Promise<void> {
    const { id, organizationId, ...rest } = this.toRow(installation, secretFields);
    await this.rows.update({ id, organizationId }, rest);
  }

  async delete(organizationId: string, slug: string): Promise<boolean> {
    return ((await this.rows.delete({ organizationId, slug })).affected ?? 0) > 0;
  }

  /** The jsonb column takes any JSON; TypeORM's deep-partial type cannot express that. */
  private toRow(
    installation: Installation,
    secretFields: string[],
  ): QueryDeepPartialEntity<InstallationRow> & { id: string; organizationId: string } {
    const { config, ...props } = installation.toProps();
    const plain: Record<string, unknown> = {};
    const secrets: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(config)) (secretFields.includes(key) ? secrets : plain)[key] = value;
    const sealedSecrets = Object.keys(secrets).length
      ? this.box.seal(JSON.stringify(secrets), aad(props.organizationId, props.slug))
      : null;
    return { ...props, config: plain as QueryDeepPartialEntity<Record<string, unknown>>, sealedSecrets };
  }

  private toDomain(row: InstallationRow): Installation {
    const secrets = row.sealedSecrets
      ? (JSON.parse(this.box.open(row.sealedSecrets, aad(row.organizationId, row.slug))) as Record<string, unknown>)
      : {};
    const { sealedSecrets: _sealed, organization: _org, ...props } = row;
    return Installation.rehydrate({ ...props, config: { ...row.config, ...secrets } });
  }
}

const aad = (organizationId: string, slug: string) => `${organizationId}:${slug}`;
