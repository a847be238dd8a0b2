import { Column, Entity, PrimaryColumn } from 'typeorm';

/** When the installation's trial started (TRIAL=true): at most one row (id 1), written once. */
@Entity('installation_trial')
export class TrialRow {
  @PrimaryColumn('smallint') id!: number;
  @Column('timestamp with time zone', { name: 'started_at', precision: 3 }) startedAt!: Date;
}
