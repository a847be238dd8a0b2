import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Organization, OrganizationProps } from './organization';
import { OrganizationRepository } from './organization.repository';

/**
 * Organizations in memory, for unit specs. Like the Postgres adapter it keeps copies, not the
 * caller's objects: a change the service does not save is not seen by the next read.
 */
export class InMemoryOrganizationRepository extends OrganizationRepository {
  private readonly rows = new Map<string, OrganizationProps>();

  /** Test setup: stores the organization as it is. */
  add(organization: Organization): Organization {
    this.rows.set(organization.id, organization.toProps());
    return organization;
  }

  async findById(id: string): Promise<Organization | null> {
    const props = this.rows.get(id);
    return props ? Organization.rehydrate(props) : null;
  }

  async findBySlug(slug: string): Promise<Organization | null> {
    const props = [...this.rows.values()].find((p) => p.slug === slug);
    return props ? Organization.rehydrate(props) : null;
  }

  async list(page: PageRequest): Promise<Page<Organization>> {
    return { data: [...this.rows.values()].slice(0, page.limit).map((p) => Organization.rehydrate(p)), nextCursor: null };
  }

  async insert(organization: Organization): Promise<void> {
    this.rows.set(organization.id, organization.toProps());
  }

  async update(organization: Organization): Promise<void> {
    if (this.rows.has(organization.id)) this.rows.set(organization.id, organization.toProps());
  }

  async exists(): Promise<boolean> {
    return this.rows.size > 0;
  }

  async count(): Promise<number> {
    return this.rows.size;
  }
}
