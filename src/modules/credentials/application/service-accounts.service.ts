import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { Signals } from '../../../queue/signals';
import { AuditAction, AuditTrail, changedFields } from '../../../shared/audit/audit-trail';
import { Principal, Role } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { ServiceAccountRepository } from '../domain/api-key.repository';
import { ServiceAccount } from '../domain/service-account';

export const SERVICE_ACCOUNTS_PER_ORGANIZATION = 100;
/** Signal topic: a service account was changed or deleted (authenticators forget what they trusted of its keys). */
export const SERVICE_ACCOUNT_CHANGED = 'service-account.changed';

/** Service accounts of an organization. A change or a delete is in force for its keys in this process at once. */
@Injectable()
export class ServiceAccountsService {
  constructor(
    private readonly accounts: ServiceAccountRepository,
    private readonly signals: Signals,
    private readonly audit: AuditTrail,
  ) {}

  @Transactional()
  async create(caller: Principal, input: { name: string; role: Role }): Promise<ServiceAccount> {
    if ((await this.accounts.countForCreate(caller.organizationId)) >= SERVICE_ACCOUNTS_PER_ORGANIZATION) {
      throw new DomainError(
        'SERVICE_ACCOUNT_LIMIT_REACHED',
        `At most ${SERVICE_ACCOUNTS_PER_ORGANIZATION} service accounts per organization`,
      );
    }
    const account = ServiceAccount.create({ organizationId: caller.organizationId, ...input });
    await this.accounts.insert(account);
    await this.audit.record({ ...audited(account, 'service_account.created'), changes: { after: described(account) } });
    return account;
  }

  list(caller: Principal, page: PageRequest): Promise<Page<ServiceAccount>> {
    return this.accounts.list(caller.organizationId, page);
  }

  async get(caller: Principal, id: string): Promise<ServiceAccount> {
    const account = await this.accounts.find(caller.organizationId, id);
    if (!account) throw new DomainError('SERVICE_ACCOUNT_NOT_FOUND', 'Service account not found');
    return account;
  }

  async update(caller: Principal, id: string, patch: { name?: string; role?: Role; disabled?: boolean }): Promise<ServiceAccount> {
    const account = await this.updateStored(caller, id, patch);
    // After the commit: its keys are read again with their next request.
    this.signals.publish(SERVICE_ACCOUNT_CHANGED, account.id);
    return account;
  }

  async delete(caller: Principal, id: string): Promise<void> {
    await this.deleteStored(caller, id);
    this.signals.publish(SERVICE_ACCOUNT_CHANGED, id);
  }

  @Transactional()
  private async updateStored(
    caller: Principal,
    id: string,
    patch: { name?: string; role?: Role; disabled?: boolean },
  ): Promise<ServiceAccount> {
    const account = await this.get(caller, id);
    const before = described(account);
    account.change(patch);
    await this.accounts.update(account);
    await this.audit.record({ ...audited(account, 'service_account.updated'), changes: changedFields(before, described(account)) });
    return account;
  }

  @Transactional()
  private async deleteStored(caller: Principal, id: string): Promise<void> {
    const account = await this.get(caller, id);
    if (!(await this.accounts.delete(caller.organizationId, id)))
      throw new DomainError('SERVICE_ACCOUNT_NOT_FOUND', 'Service account not found');
    await this.audit.record({ ...audited(account, 'service_account.deleted'), changes: { before: described(account) } });
  }
}

function audited(account: ServiceAccount, action: Extract<AuditAction, `service_account.${string}`>) {
  return { organizationId: account.organizationId, action, target: { type: 'service_account', id: account.id, name: account.name } };
}

/** A service account as the audit log shows it. */
function described(account: ServiceAccount) {
  return { name: account.name, role: account.role, disabled: account.disabled };
}
