import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../../config/app-config';
import { HistoryPartitions } from '../../../database/history-partitions';
import { Tier } from '../../licensing/domain/tiers';
import { historyRetentionDays } from '../domain/organization';

/**
 * Gives the history partitions the retention of executions and runs: the longest any
 * organization keeps them (its own setting or its tier's default, within HISTORY_RETENTION_DAYS).
 * A week's partition goes once every organization is done with it; until then the records of an
 * organization that keeps fewer days are still stored.
 */
@Injectable()
export class HistoryRetention implements OnModuleInit {
  constructor(
    private readonly partitions: HistoryPartitions,
    private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    const longest = () => this.longestDays();
    this.partitions.keep('agent_executions', longest);
    this.partitions.keep('workflow_runs', longest);
  }

  async longestDays(): Promise<number> {
    const cap = this.config.history.retentionDays;
    const settings: Array<{ tier: Tier; days: number | null }> = await this.dataSource.query(
      `SELECT DISTINCT tier, history_retention_days AS days FROM organizations`,
    );
    if (!settings.length) return cap;
    return Math.max(...settings.map(({ tier, days }) => historyRetentionDays(tier, days, cap)));
  }
}
