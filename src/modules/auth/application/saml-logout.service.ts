import { inflateRawSync } from 'node:zlib';
import { Injectable, Logger } from '@nestjs/common';
import { Profile, SAML } from '@node-saml/passport-saml';
import { AppConfig } from '../../../config/app-config';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { RefreshToken } from '../domain/refresh-token';
import { RefreshTokenRepository } from '../domain/refresh-token.repository';
import { logoutMessageProblem, weakAlgorithm } from '../domain/saml-checks';
import { serviceProviderFor } from '../domain/saml-settings';
import { samlInvalid } from '../domain/saml.errors';
import { SamlSession, SamlStore } from '../domain/saml.store';
import { AuthService } from './auth.service';
import { NAME_ID_EMAIL, SamlContext, SamlSignInService } from './saml-sign-in.service';

/** A logout message as it arrived at the SLO endpoint: the query (HTTP-Redirect) or the form (HTTP-POST). */
export interface SloMessage {
  binding: 'redirect' | 'post';
  fields: { SAMLRequest?: string; SAMLResponse?: string; RelayState?: string; SigAlg?: string; Signature?: string };
  /** The raw query string, for the redirect binding's signature (it covers the parameters as sent). */
  rawQuery: string;
}

/** What the SLO endpoint answers: the browser goes back to the IdP with our LogoutResponse, or the outcome as JSON. */
export type SloOutcome = { redirect: string } | { result: { status: 'logged_out'; sessionsEnded: number } };

const STRONG_SIG_ALG = /#(rsa-)?sha(256|384|512)$/i;

/**
 * SAML single logout, both ways. SP-initiated: the caller's SAML sessions end here and the
 * browser is sent to the IdP with our signed LogoutRequest; the IdP's LogoutResponse comes back
 * to the SLO endpoint. IdP-initiated: a signed LogoutRequest naming a NameID (and perhaps a
 * SessionIndex) ends those sessions, and the IdP gets our signed LogoutResponse. Nothing
 * unsigned, or signed by another key, ends anything.
 */
@Injectable()
export class SamlLogoutService {
  private readonly logger = new Logger('Saml');

  constructor(
    private readonly config: AppConfig,
    private readonly signIn: SamlSignInService,
    private readonly store: SamlStore,
    private readonly auth: AuthService,
    private readonly refreshTokens: RefreshTokenRepository,
  ) {}

  /**
   * Ends the caller's SAML session: the one `refreshToken` belongs to, else all of the
   * caller's SAML sessions. Answers the IdP's SLO URL with a signed LogoutRequest (null when
   * the settings name no idpSloUrl).
   */
  async logout(caller: Principal, slug: string, refreshToken?: string): Promise<{ sessionsEnded: number; logoutUrl: string | null }> {
    const context = await this.signIn.options(slug);
    if (context.organization.id !== caller.organizationId) throw new DomainError('NOT_FOUND', `No SAML sign-in for '${slug}'`);
    if (caller.credential.type !== 'session' || caller.credential.via !== 'saml') {
      throw new DomainError('FORBIDDEN', 'This session did not begin with a SAML sign-in; sign out with POST /api/auth/logout');
    }
    let sessions = await this.store.sessionsOfUser(caller.organizationId, caller.userId);
    let familyIds = sessions.map((s) => s.familyId);
    if (refreshToken) {
      const record = await this.refreshTokens.findByHash(RefreshToken.hash(refreshToken));
      familyIds = record && record.props.userId === caller.userId ? [record.props.familyId] : [];
      sessions = sessions.filter((s) => familyIds.includes(s.familyId));
    }
    await this.auth.endSessions(caller.organizationId, caller.userId, familyIds, 'saml');
    await this.store.deleteSessions(familyIds);
    const named = sessions[0];
    const logoutUrl = context.settings.idpSloUrl
      ? await new SAML(context.options).getLogoutUrlAsync(
          {
            issuer: context.settings.idpEntityId,
            nameID: named?.nameId ?? caller.email,
            nameIDFormat: named?.nameIdFormat ?? NAME_ID_EMAIL,
            ...(named?.sessionIndex ? { sessionIndex: named.sessionIndex } : {}),
          } as Profile,
          '',
          {},
        )
      : null;
    this.logger.log({ msg: 'SAML logout (SP-initiated)', organization: slug, userId: caller.userId, sessions: sessions.length });
    return { sessionsEnded: familyIds.length, logoutUrl };
  }

  /** A LogoutRequest or LogoutResponse from the IdP, on either binding; its signature is required. */
  async receive(slug: string, message: SloMessage): Promise<SloOutcome> {
    const context = await this.signIn.options(slug);
    const { SAMLRequest, SAMLResponse } = message.fields;
    if (typeof SAMLRequest !== typeof SAMLResponse && (SAMLRequest || SAMLResponse)) {
      return SAMLRequest ? this.logoutRequest(slug, context, message) : this.logoutResponse(slug, context, message);
    }
    throw this.refuse(slug, 'The request carries neither a SAMLRequest nor a SAMLResponse (or both)');
  }

  private async logoutRequest(slug: string, context: SamlContext, message: SloMessage): Promise<SloOutcome> {
    const profile = await this.validated(slug, context, message);
    if (!profile?.nameID) throw this.refuse(slug, 'The LogoutRequest names no NameID');
    const sessionIndex = typeof profile.sessionIndex === 'string' ? profile.sessionIndex : null;
    const sessions = await this.store.sessionsNamed(context.organization.id, profile.nameID, sessionIndex);
    const byUser = new Map<string, SamlSession[]>();
    for (const session of sessions) byUser.set(session.userId, [...(byUser.get(session.userId) ?? []), session]);
    for (const [userId, ofUser] of byUser) await this.end(context.organization.id, userId, ofUser);
    this.logger.log({ msg: 'SAML logout (IdP-initiated)', organization: slug, sessions: sessions.length, users: byUser.size });
    if (!context.settings.idpSloUrl) return { result: { status: 'logged_out', sessionsEnded: sessions.length } };
    const relayState = typeof message.fields.RelayState === 'string' ? message.fields.RelayState : '';
    return { redirect: await new SAML(context.options).getLogoutResponseUrlAsync(profile, relayState, {}, true) };
  }

  private async logoutResponse(slug: string, context: SamlContext, message: SloMessage): Promise<SloOutcome> {
    await this.validated(slug, context, message);
    return { result: { status: 'logged_out', sessionsEnded: 0 } };
  }

  /**
   * node-saml's verification of the message (signature with the IdP's certificates, issuer,
   * times, InResponseTo of a LogoutResponse), after what it leaves out: on the redirect binding
   * it accepts a message without any signature, so one is required here, made with SHA-256 or
   * better; the issuer and Destination are checked on both bindings.
   */
  private async validated(slug: string, context: SamlContext, message: SloMessage): Promise<Profile | null> {
    const encoded = (message.fields.SAMLRequest ?? message.fields.SAMLResponse)!;
    let xml: string;
    try {
      const raw = Buffer.from(encoded, 'base64');
      xml = (message.binding === 'redirect' ? inflateRawSync(raw, { maxOutputLength: 1 << 20 }) : raw).toString('utf8');
    } catch {
      throw this.refuse(slug, 'The logout message cannot be decoded');
    }
    const problem = logoutMessageProblem(xml, {
      idpEntityId: context.settings.idpEntityId,
      sloUrl: serviceProviderFor(this.config.publicUrl, slug).sloUrl,
    });
    if (problem) throw this.refuse(slug, problem);
    const saml = new SAML(context.options);
    try {
      if (message.binding === 'redirect') {
        const { Signature, SigAlg } = message.fields;
        if (!Signature || !SigAlg) throw new Error('The logout message is not signed');
        if (!STRONG_SIG_ALG.test(SigAlg)) throw new Error(`The logout message is signed with a weak algorithm (${SigAlg})`);
        return (await saml.validateRedirectAsync(message.fields as Record<string, string>, message.rawQuery)).profile;
      }
      const weak = weakAlgorithm(encoded);
      if (weak) throw new Error(weak);
      if (message.fields.SAMLRequest) return (await saml.validatePostRequestAsync({ SAMLRequest: encoded })).profile;
      return (await saml.validatePostResponseAsync({ SAMLResponse: encoded })).profile;
    } catch (error) {
      throw this.refuse(slug, (error as Error).message);
    }
  }

  private async end(organizationId: string, userId: string, sessions: SamlSession[]): Promise<void> {
    const familyIds = sessions.map((s) => s.familyId);
    await this.auth.endSessions(organizationId, userId, familyIds, 'saml');
    await this.store.deleteSessions(familyIds);
  }

  private refuse(slug: string, reason: string): DomainError {
    this.logger.warn({ msg: 'SAML logout refused', organization: slug, reason });
    return samlInvalid('The SAML logout message is not valid');
  }
}
