import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';

@Entity('users')
@Index('users_email_key', ['email'], { unique: true })
@Index('users_org_created_idx', ['organizationId', 'createdAt', 'id'])
export class UserRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('varchar', { length: 320 }) email!: string;
  @Column('varchar', { name: 'password_hash', length: 200, nullable: true }) passwordHash!: string | null;
  @Column('varchar', { name: 'first_name', length: 200, nullable: true }) firstName!: string | null;
  @Column('varchar', { name: 'last_name', length: 200, nullable: true }) lastName!: string | null;
  @Column('varchar', { length: 16 }) role!: 'admin' | 'member' | 'viewer';
  @Column('boolean', { default: false }) disabled!: boolean;
  @Column('boolean', { name: 'is_operator', default: false }) isOperator!: boolean;
  @Column('integer', { name: 'credentials_version', default: 0 }) credentialsVersion!: number;
  @Column('integer', { name: 'keys_version', default: 0 }) keysVersion!: number;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'updated_at', precision: 3 }) updatedAt!: Date;
}
