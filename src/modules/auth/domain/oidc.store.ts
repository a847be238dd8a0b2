import { OidcLogin } from './oidc-login';
import { OidcSettings } from './oidc-settings';

/** An organization's OIDC settings with the client secret (opened; the store keeps it sealed). */
export interface StoredOidcSettings {
  settings: OidcSettings;
  clientSecret: string;
  updatedAt: Date;
}

/** Port: OpenID Connect's rows, shared by every instance: settings per organization, pending sign-ins. */
export abstract class OidcStore {
  abstract settings(organizationId: string): Promise<StoredOidcSettings | null>;
  abstract saveSettings(organizationId: string, settings: OidcSettings, clientSecret: string): Promise<void>;
  /** False when the organization had none. */
  abstract deleteSettings(organizationId: string): Promise<boolean>;

  abstract saveLogin(login: OidcLogin): Promise<void>;
  /**
   * The organization's pending sign-in with this state hash, marked used so it cannot be taken
   * again (of two instances racing for it, one gets it); null when unknown, used or expired.
   */
  abstract takeLogin(organizationId: string, stateHash: string): Promise<OidcLogin | null>;

  /** The user the provider's `issuer` and `subject` (`iss`, `sub`) are linked to in the organization; null when none. */
  abstract linkedUser(organizationId: string, issuer: string, subject: string): Promise<string | null>;
  /** The subject the user is linked to at `issuer`; null when none. */
  abstract linkedSubject(organizationId: string, issuer: string, userId: string): Promise<string | null>;
  /**
   * Links the user to the provider's `issuer` and `subject`; false when either is linked
   * already (to another subject or user: a sign-in that raced this one).
   */
  abstract link(organizationId: string, issuer: string, subject: string, userId: string): Promise<boolean>;

  /** Forgets used or expired sign-ins. */
  abstract purge(): Promise<void>;
}
