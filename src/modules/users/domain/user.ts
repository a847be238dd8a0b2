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

  change(patch: { role?: Role; disabled?: boolean; passwordHash?: string; firstName?: string | null; lastName?: string | null }): void {
    this.props = { ...this.props, ...definedOnly(patch), updatedAt: new Date() };
  }

  toProps(): UserProps {
    return { ...this.props };
  }
}

function definedOnly<T extends object>(patch: T): Partial<T> {
  return Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<T>;
}
