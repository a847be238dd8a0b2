import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { User } from './user';

/** Port: every lookup but login's is scoped to an organization. */
export abstract class UserRepository {
  abstract findById(organizationId: string, id: string): Promise<User | null>;
  /** Login only: emails are unique across the instance. */
  abstract findByEmail(email: string): Promise<User | null>;
  abstract list(organizationId: string, page: PageRequest): Promise<Page<User>>;
  abstract insert(user: User): Promise<void>;
  abstract update(user: User): Promise<void>;
  abstract delete(organizationId: string, id: string): Promise<boolean>;
}
