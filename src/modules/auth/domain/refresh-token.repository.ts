import { RefreshToken } from './refresh-token';

export abstract class RefreshTokenRepository {
  abstract findByHash(tokenHash: string): Promise<RefreshToken | null>;
  abstract insert(token: RefreshToken): Promise<void>;
  /** Marks the token used if it still is active; false when someone else got there first. */
  abstract markUsed(id: string): Promise<boolean>;
  abstract revokeFamily(familyId: string): Promise<void>;
  /** Gives the user's live refresh tokens, but those of `exceptFamily`, the credentials version `version`. */
  abstract moveToVersion(userId: string, version: number, exceptFamily?: string): Promise<void>;
}
