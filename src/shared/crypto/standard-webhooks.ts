import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Signing secrets as Standard Webhooks writes them: `whsec_` and base64 of the key bytes. */
const PREFIX = 'whsec_';
const KEY_BYTES = 32;

export function newSigningSecret(): string {
  return `${PREFIX}${randomBytes(KEY_BYTES).toString('base64')}`;
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` (Standard Webhooks v1); a Buffer body is signed as its exact bytes. */
export function signature(secret: string, messageId: string, timestampSeconds: number, body: string | Buffer): string {
  const mac = createHmac('sha256', keyOf(secret)).update(`${messageId}.${timestampSeconds}.`).update(body).digest('base64');
  return `v1,${mac}`;
}

/** The `webhook-signature` header: one signature per secret, space-separated (two during a rotation). */
export function signatureHeader(secrets: readonly string[], messageId: string, timestampSeconds: number, body: string): string {
  return secrets.map((secret) => signature(secret, messageId, timestampSeconds, body)).join(' ');
}

/** Whether `header` carries a valid signature by `secret` (constant time per candidate). */
export function verifySignature(
  header: string,
  secret: string,
  messageId: string,
  timestampSeconds: number,
  body: string | Buffer,
): boolean {
  const expected = Buffer.from(signature(secret, messageId, timestampSeconds, body));
  return header.split(' ').some((candidate) => {
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
