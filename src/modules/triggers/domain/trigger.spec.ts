import { createHmac, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { DomainError } from '../../../shared/errors/domain-error';
import { InboundRequest, Trigger, TriggerScheme } from './trigger';

const owner = { organizationId: 'org', workflowId: 'wf' };
const body = Buffer.from(JSON.stringify({ ref: 'refs/heads/main', n: 1 }));
const now = new Date('2026-11-26T12:00:00Z');

function create(scheme: TriggerScheme, extra: Partial<Parameters<typeof Trigger.create>[0]> = {}): Trigger {
  return Trigger.create({ ...owner, scheme, ...extra });
}

function standardSigned(secret: string, raw: Buffer, at = now, id = 'msg_1'): InboundRequest {
  const headers = new Webhook(secret).sign(id, at, raw.toString('utf8'));
  return {
    headers: { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': headers },
    rawBody: raw,
  };
}

function githubSigned(secret: string, raw: Buffer): InboundRequest {
  return { headers: { 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}` }, rawBody: raw };
}

function refusal(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    if (error instanceof DomainError) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('not refused');
}

describe('Trigger', () => {
  describe('standard-webhooks', () => {
    it('accepts what the standardwebhooks package signs, and nothing else', () => {
      const trigger = create('standard-webhooks');
      expect(trigger.currentSecret).toMatch(/^whsec_/);
      expect(trigger.authenticate(standardSigned(trigger.currentSecret, body), now)).toBeNull();
      const tampered = Buffer.from(body);
      tampered[3] ^= 1;
      const forged = { ...standardSigned(trigger.currentSecret, body), rawBody: tampered };
      expect(trigger.authenticate(forged, now)).toMatch(/does not match/);
      expect(trigger.authenticate(standardSigned(create('standard-webhooks').currentSecret, body), now)).toMatch(/does not match/);
    });

    it('checks the exact bytes, also of a body that is not UTF-8', () => {
      const trigger = create('standard-webhooks');
      const raw = Buffer.from([0x7b, 0xff, 0x7d]);
      const at = String(Math.floor(now.getTime() / 1000));
      const mac = createHmac('sha256', Buffer.from(trigger.currentSecret.slice('whsec_'.length), 'base64'))
        .update(Buffer.concat([Buffer.from(`msg_1.${at}.`), raw]))
        .digest('base64');
      const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': at, 'webhook-signature': `v1,${mac}` };
      expect(trigger.authenticate({ headers, rawBody: raw }, now)).toBeNull();
      // Another invalid byte decodes to the same text (U+FFFD) but is another body.
      expect(trigger.authenticate({ headers, rawBody: Buffer.from([0x7b, 0xfe, 0x7d]) }, now)).toMatch(/does not match/);
    });

    it('refuses a timestamp more than 5 minutes from now, either way', () => {
      const trigger = create('standard-webhooks');
      for (const offset of [-301_000, 301_000]) {
        const at = new Date(now.getTime() + offset);
        expect(trigger.authenticate(standardSigned(trigger.currentSecret, body, at), now)).toMatch(/webhook-timestamp/);
      }
      expect(trigger.authenticate(standardSigned(trigger.currentSecret, body, new Date(now.getTime() - 299_000)), now)).toBeNull();
    });

    it('needs all three headers', () => {
      const trigger = create('standard-webhooks');
      const signed = standardSigned(trigger.currentSecret, body);
      const { 'webhook-id': _id, ...withoutId } = signed.headers;
      expect(trigger.authenticate({ ...signed, headers: withoutId }, now)).toMatch(/required/);
    });

    it('takes the sender’s own whsec_ secret, and refuses a short or malformed one', () => {
      const own = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwGHLrJyvCcE4=';
      expect(create('standard-webhooks', { secret: own }).authenticate(standardSigned(own, body), now)).toBeNull();
      expect(refusal(() => create('standard-webhooks', { secret: 'whsec_c2hvcnQ=' })).code).toBe('VALIDATION_FAILED');
      expect(refusal(() => create('standard-webhooks', { secret: 'not-a-whsec' })).code).toBe('VALIDATION_FAILED');
    });

    it('refuses an own key of zero bytes, of one byte repeated, or of fewer than 16 different bytes', () => {
      const whsec = (key: Buffer) => `whsec_${key.toString('base64')}`;
      const fifteen = Buffer.from(Array.from({ length: 32 }, (_, i) => i % 15));
      for (const [weak, why] of [
        [Buffer.alloc(32), /all zero/],
        [Buffer.alloc(24, 0x41), /one byte repeated/],
        [fifteen, /15 different byte values, fewer than 16/],
      ] as const) {
        expect(refusal(() => create('standard-webhooks', { secret: whsec(weak) }))).toEqual({
          code: 'VALIDATION_FAILED',
          message: expect.stringMatching(why),
        });
      }
      const sixteen = Buffer.from(Array.from({ length: 32 }, (_, i) => i % 16));
      expect(create('standard-webhooks', { secret: whsec(sixteen) }).currentSecret).toBe(whsec(sixteen));
      for (let i = 0; i < 1_000; i++) expect(() => create('standard-webhooks', { secret: whsec(randomBytes(24)) })).not.toThrow();
    });
  });

  describe('hmac-sha256', () => {
    it('checks a GitHub-style X-Hub-Signature-256 over the raw bytes', () => {
      const trigger = create('hmac-sha256', { secret: 'a-github-webhook-secret' });
      expect(trigger.authenticate(githubSigned('a-github-webhook-secret', body), now)).toBeNull();
      expect(trigger.authenticate(githubSigned('another-secret-entirely', body), now)).toMatch(/does not match/);
      expect(trigger.authenticate({ headers: {}, rawBody: body }, now)).toMatch(/X-Hub-Signature-256 header is missing/);
    });

    it('reads the header, encoding and prefix it is given', () => {
      const trigger = create('hmac-sha256', { signatureHeader: 'X-Signature', signatureEncoding: 'base64', signaturePrefix: '' });
      const mac = createHmac('sha256', trigger.currentSecret).update(body).digest('base64');
      expect(trigger.authenticate({ headers: { 'x-signature': mac }, rawBody: body }, now)).toBeNull();
    });

    it('refuses an own secret that is one character repeated, or has too few different ones', () => {
      for (const weak of ['a'.repeat(32), '0'.repeat(16), 'ab'.repeat(16), '0123456'.repeat(5), 'abc'.repeat(6)]) {
        expect({ weak, ...refusal(() => create('hmac-sha256', { secret: weak })) }).toEqual({
          weak,
          code: 'VALIDATION_FAILED',
          message: expect.stringMatching(/^secret is too weak: /),
        });
      }
      // The bar is a quarter of the length below 32 characters: 4 different ones in 16.
      expect(create('hmac-sha256', { secret: 'abcd'.repeat(4) }).currentSecret).toBe('abcdabcdabcdabcd');
      expect(create('hmac-sha256', { secret: 'correct horse battery staple' }).currentSecret).toBe('correct horse battery staple');
    });

    it('accepts random hex secrets of any length, which have 16 symbols at most (GitHub suggests SecureRandom.hex(20))', () => {
      for (let i = 0; i < 2_000; i++) {
        const secret = randomBytes(8 + (i % 121)).toString('hex');
        expect(create('hmac-sha256', { secret }).currentSecret).toBe(secret);
      }
    });

    it('dedupes on the signature header by default: the HMAC of the exact body', () => {
      const trigger = create('hmac-sha256', { secret: 'a-github-webhook-secret' });
      expect(trigger.toProps().dedupe).toBe('signature');
      const signed = githubSigned('a-github-webhook-secret', body);
      const signature = signed.headers['x-hub-signature-256'];
      expect(trigger.dedupeKey({ ...signed.headers, 'idempotency-key': 'key-1' })).toBe(signature);
      expect(trigger.dedupeKey({ ...signed.headers, 'idempotency-key': 'key-2' })).toBe(signature);
      expect(trigger.dedupeKey(githubSigned('a-github-webhook-secret', Buffer.from('{}')).headers)).not.toBe(signature);
      const own = create('hmac-sha256', { signatureHeader: 'X-Signature', signatureEncoding: 'base64', signaturePrefix: '' });
      expect(own.dedupeKey({ 'x-signature': 'c2lnbmF0dXJl', 'x-hub-signature-256': 'sha256=00' })).toBe('c2lnbmF0dXJl');
    });

    it('keeps an explicit dedupe, and refuses "signature" on the other schemes', () => {
      const headers = { ...githubSigned('a-github-webhook-secret', body).headers, 'idempotency-key': 'key-1' };
      expect(create('hmac-sha256', { dedupe: 'idempotency-key' }).dedupeKey(headers)).toBe('key-1');
      expect(create('hmac-sha256', { dedupe: 'none' }).dedupeKey(headers)).toBeNull();
      expect(refusal(() => create('bearer', { dedupe: 'signature' })).message).toMatch(
        /^dedupe "signature" applies to the hmac-sha256 scheme only/,
      );
      expect(refusal(() => create('standard-webhooks', { dedupe: 'signature' })).code).toBe('VALIDATION_FAILED');
    });

    it('refuses hmac settings on other schemes and a header name that is not one', () => {
      expect(refusal(() => create('bearer', { signatureHeader: 'X-Sig' })).message).toMatch(/hmac-sha256 scheme only/);
      expect(refusal(() => create('hmac-sha256', { signatureHeader: 'bad header' })).message).toMatch(/HTTP header name/);
    });
  });

  describe('bearer', () => {
    it('takes its generated token only', () => {
      const trigger = create('bearer');
      expect(trigger.currentSecret).toMatch(/^plat_hk_/);
      expect(trigger.authenticate({ headers: { authorization: `Bearer ${trigger.currentSecret}` }, rawBody: body }, now)).toBeNull();
      expect(trigger.authenticate({ headers: { authorization: `Bearer ${trigger.currentSecret}x` }, rawBody: body }, now)).not.toBeNull();
      expect(trigger.authenticate({ headers: {}, rawBody: body }, now)).toMatch(/Authorization/);
      expect(refusal(() => create('bearer', { secret: 'my-own-token-of-mine' })).message).toMatch(/generated/);
    });
  });

  describe('rotateSecret', () => {
    it('keeps the old secret for the grace window, then only the new one', () => {
      const trigger = create('bearer');
      const old = trigger.currentSecret;
      const fresh = trigger.rotateSecret(60, now);
      const withToken = (token: string) => ({ headers: { authorization: `Bearer ${token}` }, rawBody: body });
      expect(trigger.authenticate(withToken(old), new Date(now.getTime() + 59_000))).toBeNull();
      expect(trigger.authenticate(withToken(fresh), new Date(now.getTime() + 59_000))).toBeNull();
      expect(trigger.authenticate(withToken(old), new Date(now.getTime() + 61_000))).not.toBeNull();
    });

    it('drops the old secret at once with a grace of 0', () => {
      const trigger = create('bearer');
      const old = trigger.currentSecret;
      trigger.rotateSecret(0, now);
      expect(trigger.authenticate({ headers: { authorization: `Bearer ${old}` }, rawBody: body }, now)).not.toBeNull();
    });
  });

  describe('dedupeKey', () => {
    it('reads the source the trigger names, by default webhook-id for standard-webhooks, the signature for hmac-sha256, Idempotency-Key for bearer', () => {
      const headers = {
        'webhook-id': 'msg_1',
        'idempotency-key': 'key-1',
        'x-github-delivery': 'gh-1',
        'x-hub-signature-256': 'sha256=ab',
      };
      expect(create('standard-webhooks').dedupeKey(headers)).toBe('msg_1');
      expect(create('hmac-sha256').dedupeKey(headers)).toBe('sha256=ab');
      expect(create('bearer').dedupeKey(headers)).toBe('key-1');
      expect(create('hmac-sha256', { dedupe: 'header', dedupeHeader: 'X-GitHub-Delivery' }).dedupeKey(headers)).toBe('gh-1');
      expect(create('bearer', { dedupe: 'none' }).dedupeKey(headers)).toBeNull();
      expect(create('bearer').dedupeKey({})).toBeNull();
    });

    it('needs a header name for dedupe "header", and refuses one otherwise', () => {
      expect(refusal(() => create('bearer', { dedupe: 'header' })).message).toMatch(/dedupeHeader/);
      expect(refusal(() => create('bearer', { dedupeHeader: 'X-Id' })).message).toMatch(/dedupeHeader/);
      const trigger = create('bearer', { dedupe: 'header', dedupeHeader: 'X-Id' });
      trigger.change({ dedupe: 'none' });
      expect(trigger.toProps().dedupeHeader).toBeNull();
    });
  });
});
