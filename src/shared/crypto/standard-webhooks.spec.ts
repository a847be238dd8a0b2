import { Webhook } from 'standardwebhooks';
import { newSigningSecret, signatureHeader, verifySignature } from './standard-webhooks';

describe('Standard Webhooks signatures', () => {
  const body = JSON.stringify({ type: 'webhook.test', timestamp: '2026-01-01T00:00:00.000Z', data: { endpointId: 'e' } });
  const headers = (secrets: string[], id = 'msg-1', timestamp = Math.floor(Date.now() / 1000)) => ({
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, id, timestamp, body),
  });

  it('makes whsec_ secrets of 32 random bytes, never the same twice', () => {
    const [a, b] = [newSigningSecret(), newSigningSecret()];
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(a.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(a).not.toBe(b);
  });

  it('signs so that the official standardwebhooks package verifies it', () => {
    const secret = newSigningSecret();
    expect(new Webhook(secret).verify(body, headers([secret]))).toEqual(JSON.parse(body));
  });

  it('fails verification for another secret, a changed byte or a timestamp 6 minutes old', () => {
    const secret = newSigningSecret();
    expect(() => new Webhook(newSigningSecret()).verify(body, headers([secret]))).toThrow();
    expect(() => new Webhook(secret).verify(body.replace('"e"', '"f"'), headers([secret]))).toThrow();
    expect(() => new Webhook(secret).verify(body, headers([secret], 'msg-1', Math.floor(Date.now() / 1000) - 360))).toThrow();
  });

  it('carries one signature per secret during a rotation, so either secret verifies', () => {
    const [current, previous] = [newSigningSecret(), newSigningSecret()];
    const signed = headers([current, previous]);
    expect(signed['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(current).verify(body, signed)).toBeTruthy();
    expect(new Webhook(previous).verify(body, signed)).toBeTruthy();
    const timestamp = Number(signed['webhook-timestamp']);
    expect(verifySignature(signed['webhook-signature'], previous, 'msg-1', timestamp, body)).toBe(true);
    expect(verifySignature(signed['webhook-signature'], newSigningSecret(), 'msg-1', timestamp, body)).toBe(false);
  });
});
