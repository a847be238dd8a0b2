import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { TrialRepository } from '../domain/trial';
import { TrialRow } from './trial.orm-entity';

/** The one row of installation_trial has id 1. */
const ID = 1;

@Injectable()
export class TypeOrmTrialRepository extends TrialRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {
    super();
  }

  private get rows() {
    return this.txHost.tx.getRepository(TrialRow);
  }

  /** An insert that leaves a row already there as it is (two processes starting together agree). */
  async start(at: Date): Promise<Date> {
    await this.rows.createQueryBuilder().insert().values({ id: ID, startedAt: at }).orIgnore().execute();
    return (await this.rows.findOneByOrFail({ id: ID })).startedAt;
  }
}
