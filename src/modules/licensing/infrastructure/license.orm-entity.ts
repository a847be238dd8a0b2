import { Column, Entity, PrimaryColumn } from 'typeorm';

/** The installation's license: at most one row (id 1). */
@Entity('installation_license')
export class LicenseRow {
  @PrimaryColumn('smallint') id!: number;
  /** The signed key as given (a compact JWS); its claims are read again on load. */
  @Column('text') key!: string;
  @Column('uuid', { name: 'installed_by', nullable: true }) installedBy!: string | null;
  @Column('timestamp with time zone', { name: 'installed_at', precision: 3 }) installedAt!: Date;
}
