import { randomUUID } from 'node:crypto';
import { Role } from '../../../shared/auth/principal';

export interface UserProps {
  id: string;
  organizationId: string;
  email: string;
  passwordHash: string | null;
  /** From the identity provider, for users who sign in through SSO. */
  firstName: string | null;
  lastName: string | null;
  role: Role;
  disabled: boolean;
  isOperator: boolean;
  /**
   * Raised by every change that must end the user's sessions (password, role, disable, logout):
   * access and refresh tokens carry the version they were issued at, and an older one is refused.
   */
  credentialsVersion: number;
  /** Raised by a password change or disabling: the user's personal API keys issued before stop working. */
  keysVersion: number;
  createdAt: Date;
  updatedAt: Date;
}

/** A person of one organization. Emails are unique across the instance, compared lowercase. */
export class User {
  private constructor(private props: UserProps) {}

  static create(input: {
    organizationId: string;
    email: string;
    passwordHash: string | null;
    role: Role;
    isOperator?: boolean;
    firstName?: string | null;
    lastName?: string | null;
  }): User {
    const now = new Date();
    return new User({
      id: randomUUID(),
      organizationId: input.organizationId,
      email: User.normalizeEmail(input.email),
      passwordHash: input.passwordHash,
      firstName: input.firstName ?? null,
      lastName: input.lastName ?? null,
      role: input.role,
      disabled: false,
      isOperator: input.isOperator ?? false,
      credentialsVersion: 0,
      keysVersion: 0,
      createdAt: now,
      updatedAt: now,
    });
  }

  static rehydrate(props: UserProps): User {
    return new User({ ...props });
  }

  static normalizeEmail(email: string): string {
    return email.trim().toLowerCase();
  }

  get id() {
    return this.props.id;
  }
  get organizationId() {
    return this.props.organizationId;
  }
  get email() {
    return this.props.email;
  }
  get passwordHash() {
    return this.props.passwordHash;
  }
  get role() {
    return this.props.role;
  }
  get disabled() {
    return this.props.disabled;
  }
  get isOperator() {
    return this.props.isOperator;
  }
  get credentialsVersion() {
    return this.props.credentialsVersion;
  }
  get keysVersion() {
    return this.props.keysVersion;
  }
  get createdAt() {
    return this.props.createdAt;
  }
  get updatedAt() {
    return this.props.updatedAt;
  }

  get canSignIn(): boolean {
    return !this.props.disabled;
  }

  get firstName() {
    return this.props.firstName;
  }
  get lastName() {
    return this.props.lastName;
  }

  /**
   * A new password, a role change or disabling ends every session of the user; a new password
   * or disabling also revokes the user's personal API keys.
   */
  change(patch: { role?: Role; disabled?: boolean; passwordHash?: string; firstName?: string | null; lastName?: string | null }): void {
    const endsSessions =
      patch.passwordHash !== undefined ||
      (patch.role !== undefined && patch.role !== this.props.role) ||
      (patch.disabled !== undefined && patch.disabled !== this.props.disabled);
    const revokesKeys = patch.passwordHash !== undefined || (patch.disabled === true && !this.props.disabled);
    this.props = { ...this.props, ...definedOnly(patch), updatedAt: new Date() };
    if (endsSessions) this.endSessions();
    if (revokesKeys) this.props = { ...this.props, keysVersion: this.props.keysVersion + 1 };
  }

  /** Every access and refresh token issued so far stops working. */
  endSessions(): void {
    this.props = { ...this.props, credentialsVersion: this.props.credentialsVersion + 1, updatedAt: new Date() };
  }

  toProps(): UserProps {
    return { ...this.props };
  }
}

function definedOnly<T extends object>(patch: T): Partial<T> {
  return Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<T>;
}
