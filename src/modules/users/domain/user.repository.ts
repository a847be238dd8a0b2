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

  /**
   * Seats. Every user takes one, operators and disabled users too. `lockSeats` takes the
   * installation's seat lock, held until the current transaction ends: call it in the
   * transaction that inserts the user, before counting, so two concurrent creations cannot
   * both take the last seat.
   */
  abstract lockSeats(): Promise<void>;
  /** Users across the installation. */
  abstract count(): Promise<number>;
  abstract countInOrganization(organizationId: string): Promise<number>;
}
