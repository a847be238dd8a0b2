import { KeyRequest } from '../application/api-keys.service';
import { CreateApiKeyRequest } from './api-key.dto';

/** The create body as the service takes it: `expiresAt` left out, null (never) or a date. */
export function keyRequest(body: CreateApiKeyRequest): KeyRequest {
  const expiresAt = body.expiresAt === undefined ? undefined : body.expiresAt === null ? null : new Date(body.expiresAt);
  return { name: body.name, scopes: body.scopes, expiresAt };
}
