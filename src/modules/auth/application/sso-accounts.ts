import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, Logger } from '@nestjs/common';
import { AuditTrail } from '../../../shared/audit/audit-trail';
import { Role, SignInMethod } from '../../../shared/auth/principal';
import { Organization } from '../../organizations/domain/organization';
import { UsersService } from '../../users/application/users.service';
import { User } from '../../users/domain/user';
import { UserRepository } from '../../users/domain/user.repository';
import { signInEntry } from './auth.service';

/** Who an identity provider (SAML or OIDC) says signed in, as our user needs it. */
export interface AssertedUser {
  email: string;
  role: Role;
  firstName: string | null;
  lastName: string | null;
}

/** The user signed in, or why the account may not sign in through the organization's IdP. */
export type SsoOutcome = { user: User } | { refused: string; sameOrganization: boolean };

/** How a sign-in that knows its user otherwise than by email (OIDC: by issuer and subject) signs it in. */
export interface SsoAccount {
  /** The user to sign in (null: none yet, one is created), instead of the one with the asserted email. */
  existing: User | null;
  /** Runs in the sign-in's transaction with the user signed in (created or updated): a refusal there undoes it. */
  onSignedIn?: (user: User) => Promise<void>;
}

/**
 * What SAML and OIDC sign-ins share once the IdP's answer is validated: the user is updated
 * from the assertion (role, names) or created just in time, and the sign-in recorded, in one
 * transaction. An account of another organization, a disabled one and an instance operator are
 * refused alike (operators sign in with their password only: an organization's IdP must not
 * assert one); a refused account of the organization gets a `denied` sign-in in its log.
 */
@Injectable()
export class SsoAccounts {
  private readonly logger = new Logger('Sso');

  constructor(
    private readonly users: UserRepository,
    private readonly usersService: UsersService,
    private readonly audit: AuditTrail,
  ) {}

  /** `account`: the user found otherwise than by the asserted email (see SsoAccount). */
  async signIn(organization: Organization, via: SignInMethod, asserted: AssertedUser, account?: SsoAccount): Promise<SsoOutcome> {
    const existing = account ? account.existing : await this.users.findByEmail(asserted.email);
    if (existing && (existing.organizationId !== organization.id || !existing.canSignIn || existing.isOperator)) {
      const sameOrganization = existing.organizationId === organization.id;
      const reason = !sameOrganization
        ? 'the account belongs to another organization'
        : existing.isOperator
          ? 'the account is an instance operator, who signs in with a password only'
          : 'the account is disabled';
      this.logger.warn({ msg: 'SSO sign-in refused', via, organization: organization.slug, reason });
      if (sameOrganization) await this.audit.record(signInEntry(existing, via, 'denied'));
      return { refused: reason, sameOrganization };
    }
    return { user: await this.provision(organization, existing, via, asserted, account?.onSignedIn) };
  }

  /** Updates the user from the assertion (never its email), or creates it; with its sign-in, in one transaction. */
  @Transactional()
  private async provision(
    organization: Organization,
    existing: User | null,
    via: SignInMethod,
    asserted: AssertedUser,
    onSignedIn?: (user: User) => Promise<void>,
  ): Promise<User> {
    const { email, role, firstName, lastName } = asserted;
    const changes = { role, firstName, lastName };
    let user: User;
    if (existing) {
      existing.change(changes);
      await this.users.update(existing);
      this.logger.log({ msg: 'SSO sign-in', via, organization: organization.slug, userId: existing.id, role: asserted.role });
      user = existing;
    } else {
      user = await this.usersService.create(organization.id, { email, ...changes });
      this.logger.log({ msg: 'SSO sign-in, user provisioned', via, organization: organization.slug, userId: user.id, role: asserted.role });
    }
    await onSignedIn?.(user);
    await this.audit.record(signInEntry(user, via, 'success'));
    return user;
  }
}
