import { LoginCode } from './login-code';
import { SamlSettings } from './saml-settings';

/** How long an AuthnRequest may wait for its answer. */
export const REQUEST_TTL_MS = 10 * 60_000;

/** Port: SAML's rows, shared by every instance: settings per organization, pending AuthnRequest ids, one-time codes. */
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

  /** Forgets answered or expired requests and codes. */
  abstract purge(): Promise<void>;
}
