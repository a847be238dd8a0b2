import { LoginCode } from './login-code';
import { SamlSettings } from './saml-settings';
import { SamlSpKey } from './saml-sp-key';

/** A session that began with a SAML sign-in: the refresh-token family, and how the IdP names it (for single logout). */
export interface SamlSession {
  familyId: string;
  organizationId: string;
  userId: string;
  nameId: string;
  nameIdFormat: string | null;
  sessionIndex: string | null;
  expiresAt: Date;
}

/** How long an AuthnRequest may wait for its answer. */
export const REQUEST_TTL_MS = 10 * 60_000;

/**
 * Port: SAML's rows, shared by every instance: settings per organization, SP key pairs, pending
 * request ids, one-time codes, SAML sessions, and the assertions of IdP-initiated sign-ins seen.
 */
export abstract class SamlStore {
  abstract settings(organizationId: string): Promise<SamlSettings | null>;
  abstract saveSettings(organizationId: string, settings: SamlSettings): Promise<void>;
  /** False when the organization had none. */
  abstract deleteSettings(organizationId: string): Promise<boolean>;

  /** Remembers an AuthnRequest id sent to the IdP, for REQUEST_TTL_MS. */
  abstract saveRequest(organizationId: string, id: string): Promise<void>;
  /** When the request was made, while it is unused and unexpired; else null. */
  abstract pendingRequest(organizationId: string, id: string): Promise<Date | null>;
  /** Marks the request answered; true for the one caller that did (a racing replay gets false). */
  abstract useRequest(organizationId: string, id: string): Promise<boolean>;

  abstract saveCode(code: LoginCode): Promise<void>;
  /** The code with this hash, removed so it cannot be taken again (expired or not); null if unknown. */
  abstract takeCode(codeHash: string): Promise<LoginCode | null>;

  /** The organization's SP key pairs not yet purged (retired ones included). */
  abstract spKeys(organizationId: string): Promise<SamlSpKey[]>;
  /** Adds a current pair; false (nothing written) when the organization already has a current one. */
  abstract addSpKey(key: SamlSpKey): Promise<boolean>;
  /** Sets when a pair stops working (the current one being rotated out, or earlier for one in its overlap). */
  abstract retireSpKey(organizationId: string, id: string, retireAt: Date): Promise<void>;

  abstract saveSession(session: SamlSession): Promise<void>;
  /** The live sessions the IdP names: by NameID, narrowed to one SessionIndex when given. */
  abstract sessionsNamed(organizationId: string, nameId: string, sessionIndex: string | null): Promise<SamlSession[]>;
  /** The user's live SAML sessions, newest first. */
  abstract sessionsOfUser(organizationId: string, userId: string): Promise<SamlSession[]>;
  abstract deleteSessions(familyIds: string[]): Promise<void>;

  /**
   * Records an IdP-initiated assertion's ID until it expires; true for the one caller that
   * recorded it first (the same assertion posted again, to any instance, gets false).
   */
  abstract claimAssertion(organizationId: string, assertionId: string, expiresAt: Date): Promise<boolean>;

  /** Forgets answered or expired requests and codes, expired sessions and assertions, long-retired key pairs. */
  abstract purge(): Promise<void>;
}
