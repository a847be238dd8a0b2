import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { User, UserProps } from './user';
import { UserRepository } from './user.repository';

/**
 * Users in memory, for unit specs. Like the Postgres adapter it keeps copies, not the caller's
 * objects: a change the service does not save is not seen by the next read.
 */
export class InMemoryUserRepository extends UserRepository {
  private readonly rows = new Map<string, UserProps>();
  /**
   * What the seat check did, in order: `lock` (`lock in transaction` when `inTransaction` says
   * one is active), `count organization`, `count`, and each `insert`.
   */
  readonly calls: string[] = [];

  /**
   * `inTransaction` tells whether a transaction is active, for `calls` to show whether the seat
   * lock was taken in one; a spec passes that of `inlineTransactions()`, which domain code cannot
   * import. Without it, no transaction ever is.
   */
  constructor(private readonly options: { inTransaction?: () => boolean } = {}) {
    super();
  }

  /** Test setup: stores the user as it is. */
  add(user: User): User {
    this.rows.set(user.id, user.toProps());
    return user;
  }

  all(): User[] {
    return [...this.rows.values()].map((props) => User.rehydrate(props));
  }

  async findById(organizationId: string, id: string): Promise<User | null> {
    const props = this.rows.get(id);
    return props && props.organizationId === organizationId ? User.rehydrate(props) : null;
  }

  async findByEmail(email: string): Promise<User | null> {
    const props = [...this.rows.values()].find((p) => p.email === User.normalizeEmail(email));
    return props ? User.rehydrate(props) : null;
  }

  async list(organizationId: string, page: PageRequest): Promise<Page<User>> {
    const data = this.all().filter((u) => u.organizationId === organizationId);
    return { data: data.slice(0, page.limit), nextCursor: null };
  }

  async insert(user: User): Promise<void> {
    this.calls.push('insert');
    if ([...this.rows.values()].some((p) => p.email === user.email)) throw new Error(`duplicate email ${user.email}`);
    this.rows.set(user.id, user.toProps());
  }

  async update(user: User): Promise<void> {
    if (this.rows.has(user.id)) this.rows.set(user.id, user.toProps());
  }

  async delete(organizationId: string, id: string): Promise<boolean> {
    if (this.rows.get(id)?.organizationId !== organizationId) return false;
    return this.rows.delete(id);
  }

  /** One process: nothing to lock, only the call to record. */
  async lockSeats(): Promise<void> {
    this.calls.push(this.options.inTransaction?.() ? 'lock in transaction' : 'lock');
  }

  async count(): Promise<number> {
    this.calls.push('count');
    return this.rows.size;
  }

  async countInOrganization(organizationId: string): Promise<number> {
    this.calls.push('count organization');
    return [...this.rows.values()].filter((p) => p.organizationId === organizationId).length;
  }
}
