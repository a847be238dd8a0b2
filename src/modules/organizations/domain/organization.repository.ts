import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Organization } from './organization';

export abstract class OrganizationRepository {
  abstract findById(id: string): Promise<Organization | null>;
  abstract findBySlug(slug: string): Promise<Organization | null>;
  abstract list(page: PageRequest): Promise<Page<Organization>>;
  abstract insert(organization: Organization): Promise<void>;
  abstract update(organization: Organization): Promise<void>;
  abstract exists(): Promise<boolean>;
  abstract count(): Promise<number>;
}
