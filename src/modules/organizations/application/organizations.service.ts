import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { User } from '../../users/domain/user';
import { UsersService } from '../../users/application/users.service';
import { Organization, Tier } from '../domain/organization';
import { OrganizationRepository } from '../domain/organization.repository';

export interface NewOrganization {
  slug: string;
  name: string;
  tier: Tier;
  admin: { email: string; password?: string; isOperator?: boolean };
}

@Injectable()
export class OrganizationsService {
  constructor(
    private readonly organizations: OrganizationRepository,
    private readonly users: UsersService,
  ) {}

  /** An organization and its first admin, together or not at all. */
  @Transactional()
  async create(input: NewOrganization): Promise<{ organization: Organization; admin: User }> {
    const organization = Organization.create({ slug: input.slug, name: input.name, tier: input.tier });
    await this.organizations.insert(organization);
    const admin = await this.users.create(organization.id, { ...input.admin, role: 'admin' });
    return { organization, admin };
  }

  list(page: PageRequest): Promise<Page<Organization>> {
    return this.organizations.list(page);
  }

  async current(caller: Principal): Promise<Organization> {
    return this.require(caller.organizationId);
  }

  async require(id: string): Promise<Organization> {
    const organization = await this.organizations.findById(id);
    if (!organization) throw new DomainError('ORGANIZATION_NOT_FOUND', `Organization '${id}' was not found`);
    return organization;
  }

  hasAny(): Promise<boolean> {
    return this.organizations.exists();
  }
}
