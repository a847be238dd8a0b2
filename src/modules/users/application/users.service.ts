import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { LicensingService } from '../../licensing/application/licensing.service';
import { Signals } from '../../../queue/signals';
import { AuditAction, AuditChanges, AuditTrail, changedFields } from '../../../shared/audit/audit-trail';
import { assertSession, Principal, Role } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { PasswordHasher } from '../domain/password-hasher';
import { User } from '../domain/user';
import { UserRepository } from '../domain/user.repository';

/** A new user whose password is hashed already (null: signs in through SSO only). */
export type PreparedUser = Omit<NewUser, 'password'> & { passwordHash: string | null };

export interface NewUser {
  email: string;
  /** None for users who sign in only through SSO. */
  password?: string;
  role: Role;
  isOperator?: boolean;
  firstName?: string | null;
  lastName?: string | null;
}

/**
 * Signal topic: a user was changed or deleted through this service (API keys acting as the
 * user are read again on their next use: at once in this process, soon in the others).
 */
export const USER_CHANGED = 'user.changed';

/** User management inside the caller's organization (admin use cases). */
@Injectable()
export class UsersService {
  constructor(
    private readonly users: UserRepository,
    private readonly hasher: PasswordHasher,
    private readonly licensing: LicensingService,
    private readonly signals: Signals,
    private readonly audit: AuditTrail,
  ) {}

  list(caller: Principal, page: PageRequest): Promise<Page<User>> {
    return this.users.list(caller.organizationId, page);
  }

  async get(caller: Principal, id: string): Promise<User> {
    return this.require(caller.organizationId, id);
  }

  /**
   * Also used by the first-start bootstrap and SAML provisioning. The password is hashed first,
   * outside the transaction: every creation in the installation waits for the seat lock, which
   * is held for the seat checks and the insert only, not for a hash's tens of milliseconds.
   */
  async create(organizationId: string, input: NewUser): Promise<User> {
    return this.createPrepared(organizationId, await this.prepare(input));
  }

  /** The user to create, its password (if any) hashed: before a transaction that creates it (organization creation). */
  async prepare(input: NewUser): Promise<PreparedUser> {
    const { password, ...rest } = input;
    return { ...rest, passwordHash: password ? await this.hasher.hash(password) : null };
  }

  /**
   * SEAT_LIMIT_REACHED when the organization has used its own quota (so one organization cannot
   * take every seat of the installation from the others), or the license's seats are all taken.
   */
  @Transactional()
  async createPrepared(organizationId: string, input: PreparedUser): Promise<User> {
    await this.assertSeatAvailable(organizationId);
    const user = User.create({
      organizationId,
      email: input.email,
      passwordHash: input.passwordHash,
      role: input.role,
      isOperator: input.isOperator,
      firstName: input.firstName,
      lastName: input.lastName,
    });
    await this.users.insert(user);
    await this.audit.record({ ...audited(user, 'user.created'), changes: { after: described(user) } });
    return user;
  }

  /**
   * An admin adds a user to the caller's organization. Setting a password needs a signed-in
   * user: with an API key it is 403 (a key that could set one could sign in as that user).
   */
  add(caller: Principal, input: NewUser): Promise<User> {
    if (input.password !== undefined) assertSession(caller, 'set a password');
    return this.create(caller.organizationId, input);
  }

  /** Seats taken across the installation. */
  seatsTaken(): Promise<number> {
    return this.users.count();
  }

  /** Seats the organization's users take. */
  seatsTakenIn(organizationId: string): Promise<number> {
    return this.users.countInOrganization(organizationId);
  }

  /**
   * Setting a password and changing the role (to another one) need a signed-in user: with an
   * API key they are 403, so no key can take over a person's account or raise a role. Disabling
   * stays open to keys with `users:write`.
   */
  async update(caller: Principal, id: string, patch: { role?: Role; disabled?: boolean; password?: string }): Promise<User> {
    if (patch.password !== undefined) assertSession(caller, 'set a password');
    // Hashed before the transaction, which holds the user's row.
    const passwordHash = patch.password ? await this.hasher.hash(patch.password) : undefined;
    const user = await this.change(caller, id, { role: patch.role, disabled: patch.disabled, passwordHash });
    // After the commit: keys acting as the user (ended by a new password or disabling, narrowed
    // by a lower role) are read again with their next request.
    this.signals.publish(USER_CHANGED, user.id);
    return user;
  }

  async changeOwnPassword(caller: Principal, currentPassword: string, newPassword: string): Promise<void> {
    const user = await this.require(caller.organizationId, caller.userId);
    if (!user.passwordHash || !(await this.hasher.verify(user.passwordHash, currentPassword))) {
      throw new DomainError('INVALID_CREDENTIALS', 'The current password is wrong');
    }
    user.change({ passwordHash: await this.hasher.hash(newPassword) });
    await this.savePassword(user);
    this.signals.publish(USER_CHANGED, user.id);
  }

  /**
   * The operator's reset from the command line (`npm run cli -- user:reset-password`): no caller,
   * the user found by email in any organization. Like every new password it ends the user's
   * sessions and personal API keys. USER_NOT_FOUND for an unknown email.
   */
  async resetPassword(email: string, password: string): Promise<User> {
    const user = await this.users.findByEmail(email);
    if (!user) throw new DomainError('USER_NOT_FOUND', `No user has the email '${email}'`);
    user.change({ passwordHash: await this.hasher.hash(password) });
    await this.savePassword(user);
    this.signals.publish(USER_CHANGED, user.id);
    return user;
  }

  async delete(caller: Principal, id: string): Promise<void> {
    await this.deleteStored(caller, id);
    // After the commit: the user's keys are read again with their next request.
    this.signals.publish(USER_CHANGED, id);
  }

  @Transactional()
  private async deleteStored(caller: Principal, id: string): Promise<void> {
    if (id === caller.userId) throw new DomainError('FORBIDDEN', 'Admins cannot delete themselves');
    const user = await this.require(caller.organizationId, id);
    assertMayManage(caller, user);
    if (!(await this.users.delete(caller.organizationId, id))) throw notFound(id);
    await this.audit.record({ ...audited(user, 'user.deleted'), changes: { before: described(user) } });
  }

  /** A new password (hashed already, outside the transaction) stored with its audit event, which names no hash. */
  @Transactional()
  private async savePassword(user: User): Promise<void> {
    await this.users.update(user);
    await this.audit.record({ ...audited(user, 'user.updated'), changes: { after: { password: REDACTED } } });
  }

  @Transactional()
  private async change(caller: Principal, id: string, patch: { role?: Role; disabled?: boolean; passwordHash?: string }): Promise<User> {
    const user = await this.require(caller.organizationId, id);
    assertMayManage(caller, user);
    if (patch.role !== undefined && patch.role !== user.role) assertSession(caller, "change a user's role");
    if (user.id === caller.userId && ((patch.role && patch.role !== 'admin') || patch.disabled)) {
      throw new DomainError('FORBIDDEN', 'Admins cannot demote or disable themselves');
    }
    const before = described(user);
    user.change(patch);
    await this.users.update(user);
    const changes: AuditChanges = changedFields(before, described(user));
    // A new password is named, never its hash.
    if (patch.passwordHash !== undefined) changes.after = { ...(changes.after as object), password: REDACTED };
    await this.audit.record({ ...audited(user, 'user.updated'), changes });
    return user;
  }

  /** In create's transaction: the seat lock holds until the user is inserted (or not). */
  private async assertSeatAvailable(organizationId: string): Promise<void> {
    await this.users.lockSeats();
    const limits = await this.licensing.seatLimits(organizationId);
    if (limits.organization !== null && (await this.users.countInOrganization(organizationId)) >= limits.organization) {
      throw new DomainError('SEAT_LIMIT_REACHED', `This organization has used its ${limits.organization} seats`);
    }
    if (limits.installation !== null && (await this.users.count()) >= limits.installation) {
      throw new DomainError('SEAT_LIMIT_REACHED', `The license allows ${limits.installation} users and all are taken`);
    }
  }

  private async require(organizationId: string, id: string): Promise<User> {
    const user = await this.users.findById(organizationId, id);
    if (!user) throw notFound(id);
    return user;
  }
}

/** An operator account is changed, disabled or deleted by operators only: an organization's admins cannot take it over. */
function assertMayManage(caller: Principal, user: User): void {
  if (user.isOperator && !caller.isOperator) {
    throw new DomainError('FORBIDDEN', 'Only instance operators may change, disable or delete an operator account');
  }
}

const REDACTED = '[redacted]';

function audited(user: User, action: Extract<AuditAction, `user.${string}`>) {
  return { organizationId: user.organizationId, action, target: { type: 'user', id: user.id, name: user.email } };
}

/** A user as the audit log shows it: never the password's hash, nor the internal versions. */
function described(user: User) {
  return {
    email: user.email,
    firstName: user.firstName,
    lastName: user.lastName,
    role: user.role,
    disabled: user.disabled,
    isOperator: user.isOperator,
  };
}

function notFound(id: string): DomainError {
  return new DomainError('USER_NOT_FOUND', `User '${id}' was not found`);
}
