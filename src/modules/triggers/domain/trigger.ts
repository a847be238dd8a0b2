import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { liveSecrets, rotated, RotatingSecret } from '../../../shared/crypto/rotating-secrets';
import { newSigningSecret, verifySignature } from '../../../shared/crypto/standard-webhooks';
import { DomainError } from '../../../shared/errors/domain-error';

export const TRIGGER_SCHEMES = ['standard-webhooks', 'hmac-sha256', 'bearer'] as const;
export type TriggerScheme = (typeof TRIGGER_SCHEMES)[number];
export const SIGNATURE_ENCODINGS = ['hex', 'base64'] as const;
export type SignatureEncoding = (typeof SIGNATURE_ENCODINGS)[number];
export const DEDUPE_SOURCES = ['webhook-id', 'idempotency-key', 'signature', 'header', 'none'] as const;
export type DedupeSource = (typeof DEDUPE_SOURCES)[number];
export const RESPONSE_MODES = ['async', 'sync'] as const;
export type ResponseMode = (typeof RESPONSE_MODES)[number];

export const TRIGGER_LIMITS = {
  perWorkflow: 20,
  nameLength: 100,
  mappingLength: 10_000,
  headerNameLength: 100,
  prefixLength: 32,
  /** An own hmac-sha256 secret's length. */
  secret: { min: 16, max: 256 },
  /** An own standard-webhooks key (the bytes after whsec_): at least this many different byte values. */
  keyDistinctBytes: 16,
  /** An own hmac-sha256 secret: at least this many different characters, or a quarter of its length when fewer. */
  secretDistinctCharacters: 8,
  waitSeconds: { min: 1, max: 60, default: 30 },
  graceSeconds: { max: 7 * 86_400, default: 86_400 },
  /** Standard Webhooks: a timestamp further than this from now is refused (replays of old deliveries). */
  toleranceSeconds: 300,
  dedupeKeyLength: 200,
};

export interface TriggerProps {
  id: string;
  organizationId: string;
  workflowId: string;
  name: string | null;
  scheme: TriggerScheme;
  /** hmac-sha256 only: where the signature is, how it is written. */
  signatureHeader: string | null;
  signatureEncoding: SignatureEncoding | null;
  signaturePrefix: string | null;
  /** The current secret first; at most one older one during a rotation's grace window. */
  secrets: RotatingSecret[];
  /** JSONata from `{ headers, body, query }` to the run's input; null: the body is the input. */
  mapping: string | null;
  dedupe: DedupeSource;
  dedupeHeader: string | null;
  responseMode: ResponseMode;
  waitSeconds: number;
  /** The version every run uses; null: the workflow's current one when the request comes. */
  workflowVersion: number | null;
  enabled: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface TriggerSettings {
  name?: string | null;
  signatureHeader?: string;
  signatureEncoding?: SignatureEncoding;
  signaturePrefix?: string;
  mapping?: string | null;
  dedupe?: DedupeSource;
  dedupeHeader?: string | null;
  responseMode?: ResponseMode;
  waitSeconds?: number;
  workflowVersion?: number | null;
  enabled?: boolean;
}

/** A request as the hook received it: header names lower-case, the body's exact bytes. */
export interface InboundRequest {
  headers: Record<string, string>;
  rawBody: Buffer;
}

/**
 * What tells a repeated delivery by default: a signed header where the scheme has one. An
 * hmac-sha256 request signs only its body, so its signature (an HMAC of the exact bytes) is
 * the delivery's identity: a captured request sent again is the same run whatever
 * Idempotency-Key it carries. Standard Webhooks signs its webhook-id.
 */
const DEFAULT_DEDUPE: Record<TriggerScheme, DedupeSource> = {
  'standard-webhooks': 'webhook-id',
  'hmac-sha256': 'signature',
  bearer: 'idempotency-key',
};

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
const PRINTABLE = /^[\x20-\x7e]+$/;

/**
 * An inbound webhook trigger of a workflow: a public URL a sender posts to, authenticated by
 * the trigger's own scheme (a Standard Webhooks signature, a GitHub-style HMAC header or a
 * bearer token), each accepted request starting one run.
 */
export class Trigger {
  private constructor(private props: TriggerProps) {}

  /** `secret`: the sender's own (standard-webhooks, hmac-sha256); unset, one is made. */
  static create(input: { organizationId: string; workflowId: string; scheme: TriggerScheme; secret?: string } & TriggerSettings): Trigger {
    const now = new Date();
    const { organizationId, workflowId, scheme, secret, ...settings } = input;
    if (secret !== undefined) assertOwnSecret(scheme, secret);
    const trigger = new Trigger({
      id: randomUUID(),
      organizationId,
      workflowId,
      name: null,
      scheme,
      signatureHeader: scheme === 'hmac-sha256' ? 'X-Hub-Signature-256' : null,
      signatureEncoding: scheme === 'hmac-sha256' ? 'hex' : null,
      signaturePrefix: scheme === 'hmac-sha256' ? 'sha256=' : null,
      secrets: [{ secret: secret ?? newSecret(scheme), expiresAt: null }],
      mapping: null,
      dedupe: DEFAULT_DEDUPE[scheme],
      dedupeHeader: null,
      responseMode: 'async',
      waitSeconds: TRIGGER_LIMITS.waitSeconds.default,
      workflowVersion: null,
      enabled: true,
      createdAt: now,
      updatedAt: now,
    });
    trigger.change(settings, now);
    return trigger;
  }

  static rehydrate(props: TriggerProps): Trigger {
    return new Trigger({ ...props, secrets: props.secrets.map((s) => ({ ...s })) });
  }

  get id() {
    return this.props.id;
  }
  get organizationId() {
    return this.props.organizationId;
  }
  get workflowId() {
    return this.props.workflowId;
  }
  get enabled() {
    return this.props.enabled;
  }
  get mapping() {
    return this.props.mapping;
  }
  get responseMode() {
    return this.props.responseMode;
  }
  get waitSeconds() {
    return this.props.waitSeconds;
  }
  get workflowVersion() {
    return this.props.workflowVersion;
  }
  /** The secret given out last (shown once, after create and rotate). */
  get currentSecret(): string {
    return this.props.secrets[0].secret;
  }

  toProps(): TriggerProps {
    return { ...this.props, secrets: this.props.secrets.map((s) => ({ ...s })) };
  }

  change(settings: TriggerSettings, now = new Date()): void {
    const next = { ...this.props, updatedAt: now };
    for (const [key, value] of Object.entries(settings) as Array<[keyof TriggerSettings, unknown]>) {
      if (value !== undefined) (next as Record<string, unknown>)[key] = value;
    }
    assertSettings(next, settings);
    if (next.dedupe !== 'header') next.dedupeHeader = null;
    this.props = next;
  }

  /** A new current secret; the old one keeps working for `graceSeconds` (0: stops at once). */
  rotateSecret(graceSeconds: number, now = new Date()): string {
    const secret = newSecret(this.props.scheme);
    this.props = { ...this.props, secrets: rotated(this.props.secrets, secret, graceSeconds, now), updatedAt: now };
    return secret;
  }

  /** Why the request is not the sender's (null when it is), checked on its exact bytes in constant time. */
  authenticate(request: InboundRequest, now = new Date()): string | null {
    const secrets = liveSecrets(this.props.secrets, now);
    switch (this.props.scheme) {
      case 'standard-webhooks':
        return standardWebhooksProblem(request, secrets, now);
      case 'hmac-sha256':
        return this.hmacProblem(request, secrets);
      case 'bearer':
        return bearerProblem(request, secrets);
    }
  }

  /**
   * The key a repeated delivery is known by, from the trigger's dedupe source, read from an
   * authenticated request's headers; null: every request is new. `signature`: the hmac-sha256
   * signature header, which `authenticate` checked against the body.
   */
  dedupeKey(headers: Record<string, string>): string | null {
    const header = {
      'webhook-id': 'webhook-id',
      'idempotency-key': 'idempotency-key',
      signature: this.props.signatureHeader,
      header: this.props.dedupeHeader,
      none: null,
    }[this.props.dedupe];
    const value = header ? headers[header.toLowerCase()] : undefined;
    return value ? value.slice(0, TRIGGER_LIMITS.dedupeKeyLength) : null;
  }

  private hmacProblem(request: InboundRequest, secrets: string[]): string | null {
    const name = this.props.signatureHeader!;
    const given = request.headers[name.toLowerCase()];
    if (!given) return `The ${name} header is missing`;
    const prefix = this.props.signaturePrefix ?? '';
    const matches = secrets.some((secret) => {
      const mac = createHmac('sha256', secret)
        .update(request.rawBody)
        .digest(this.props.signatureEncoding ?? 'hex');
      return sameText(given, `${prefix}${mac}`);
    });
    return matches ? null : `The ${name} signature does not match the body`;
  }
}

function standardWebhooksProblem(request: InboundRequest, secrets: string[], now: Date): string | null {
  const id = request.headers['webhook-id'];
  const timestamp = request.headers['webhook-timestamp'];
  const signature = request.headers['webhook-signature'];
  if (!id || !timestamp || !signature) return 'The webhook-id, webhook-timestamp and webhook-signature headers are required';
  const seconds = /^\d{1,12}$/.test(timestamp) ? Number(timestamp) : NaN;
  if (!Number.isFinite(seconds) || Math.abs(now.getTime() / 1000 - seconds) > TRIGGER_LIMITS.toleranceSeconds) {
    return `The webhook-timestamp is more than ${TRIGGER_LIMITS.toleranceSeconds} s away from now`;
  }
  const matches = secrets.some((secret) => verifySignature(signature, secret, id, seconds, request.rawBody));
  return matches ? null : 'The webhook-signature does not match the body';
}

function bearerProblem(request: InboundRequest, secrets: string[]): string | null {
  const match = /^Bearer ([^\s]+)$/i.exec(request.headers.authorization ?? '');
  if (!match) return 'An Authorization: Bearer header with the trigger token is required';
  return secrets.some((secret) => sameText(match[1], secret)) ? null : "The bearer token is not this trigger's";
}

/** Equal texts, compared in time independent of where they differ (digests make the lengths equal). */
function sameText(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

function newSecret(scheme: TriggerScheme): string {
  if (scheme === 'standard-webhooks') return newSigningSecret();
  return `${scheme === 'bearer' ? 'plat_hk_' : ''}${randomBytes(32).toString('base64url')}`;
}

function invalid(path: string, message: string): DomainError {
  return new DomainError('VALIDATION_FAILED', `${path} ${message}`, [{ path, message: `${path} ${message}` }]);
}

function assertOwnSecret(scheme: TriggerScheme, secret: string): void {
  if (scheme === 'bearer') throw invalid('secret', 'cannot be given for the bearer scheme: the token is generated');
  if (scheme === 'standard-webhooks') {
    const key = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret);
    if (!key || Buffer.from(key[1], 'base64').length < 24) {
      throw invalid('secret', 'must be whsec_ followed by the base64 of at least 24 bytes');
    }
    const weakness = keyWeakness(Buffer.from(key[1], 'base64'));
    if (weakness) throw invalid('secret', `is too weak: ${weakness}; use random bytes (the standardwebhooks libraries make one)`);
    return;
  }
  const { min, max } = TRIGGER_LIMITS.secret;
  if (secret.length < min || secret.length > max || !PRINTABLE.test(secret)) {
    throw invalid('secret', `must be ${min} to ${max} printable ASCII characters`);
  }
  const weakness = textWeakness(secret);
  if (weakness) throw invalid('secret', `is too weak: ${weakness}; use a random one (e.g. openssl rand -hex 32)`);
}

/** Why a standard-webhooks key of 24 or more bytes is no secret; 24 random bytes have about 23 different values. */
function keyWeakness(key: Buffer): string | null {
  const distinct = new Set(key).size;
  if (key.every((byte) => byte === 0)) return 'its bytes are all zero';
  if (distinct === 1) return 'it is one byte repeated';
  const least = TRIGGER_LIMITS.keyDistinctBytes;
  return distinct < least ? `it has ${distinct} different byte values, fewer than ${least}` : null;
}

/**
 * Why an hmac-sha256 secret (printable text, as GitHub takes it) is no secret. The bar for
 * different characters is lower than for key bytes: a random hex secret has 16 symbols at
 * most, and one of 40 (GitHub's `SecureRandom.hex(20)`) usually misses one or two.
 */
function textWeakness(secret: string): string | null {
  const distinct = new Set(secret).size;
  if (distinct === 1) return 'it is one character repeated';
  const least = Math.min(TRIGGER_LIMITS.secretDistinctCharacters, Math.ceil(secret.length / 4));
  return distinct < least ? `it has ${distinct} different characters, fewer than ${least}` : null;
}

function assertSettings(next: TriggerProps, given: TriggerSettings): void {
  if (next.scheme !== 'hmac-sha256') {
    for (const key of ['signatureHeader', 'signatureEncoding', 'signaturePrefix'] as const) {
      if (given[key] !== undefined) throw invalid(key, 'applies to the hmac-sha256 scheme only');
    }
  } else {
    if (!HEADER_NAME.test(next.signatureHeader ?? '')) throw invalid('signatureHeader', 'must be an HTTP header name');
    if ((next.signaturePrefix ?? '').length > TRIGGER_LIMITS.prefixLength) {
      throw invalid('signaturePrefix', `must be at most ${TRIGGER_LIMITS.prefixLength} characters`);
    }
  }
  if (next.dedupe === 'signature' && next.scheme !== 'hmac-sha256') {
    throw invalid('dedupe', '"signature" applies to the hmac-sha256 scheme only (standard-webhooks dedupes on its signed webhook-id)');
  }
  if (next.dedupe === 'header' && (!next.dedupeHeader || !HEADER_NAME.test(next.dedupeHeader))) {
    throw invalid('dedupeHeader', 'must name an HTTP header when dedupe is "header"');
  }
  if (given.dedupeHeader && next.dedupe !== 'header') throw invalid('dedupeHeader', 'applies when dedupe is "header" only');
}
