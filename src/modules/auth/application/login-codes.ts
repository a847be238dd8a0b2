import { Injectable } from '@nestjs/common';
import { SignInMethod } from '../../../shared/auth/principal';
import { User } from '../../users/domain/user';
import { UserRepository } from '../../users/domain/user.repository';
import { LoginCode } from '../domain/login-code';
import { SamlStore } from '../domain/saml.store';

/**
 * The one-time codes browser sign-ins (SAML, OIDC) hand to the client in their redirect, kept
 * in one table: a code names how its user signed in, and is exchanged only at that method's
 * exchange route.
 */
@Injectable()
export class LoginCodes {
  constructor(
    private readonly store: SamlStore,
    private readonly users: UserRepository,
  ) {}

  /** `target` with a fresh one-time code for `user` in its query (`code`); `familyId` names the session it starts, if the sign-in made one. */
  async redirectWithCode(user: User, via: SignInMethod, target: string, familyId?: string): Promise<string> {
    const { code, record } = LoginCode.issue({ userId: user.id, organizationId: user.organizationId, via, familyId });
    await this.store.saveCode(record);
    const url = new URL(target);
    url.searchParams.set('code', code);
    return url.toString();
  }

  /** The user a live code of this method was issued for, and the session it starts, or null; the code is spent either way. */
  async redeem(code: string, via: SignInMethod): Promise<{ user: User; familyId: string | null } | null> {
    const record = await this.store.takeCode(LoginCode.hash(code));
    if (!record?.isLive() || record.props.via !== via) return null;
    const user = await this.users.findById(record.props.organizationId, record.props.userId);
    return user?.canSignIn ? { user, familyId: record.props.familyId ?? null } : null;
  }
}
