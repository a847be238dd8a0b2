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

  /** Forgets used or expired sign-ins. */
  abstract purge(): Promise<void>;
}
