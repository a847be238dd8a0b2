import { createHash } from 'node:crypto';
import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { AuditTrail } from '../../../shared/audit/audit-trail';
import { Principal } from '../../../shared/auth/principal';
import { selfSignedCertificate } from '../../../shared/crypto/self-signed-certificate';
import { DomainError } from '../../../shared/errors/domain-error';
import { SubscriptionService } from '../../organizations/application/subscription.service';
import { SAML_FEATURE } from '../domain/saml-settings';
import { DEFAULT_OVERLAP_MS, liveKeys, SamlSpKey, SP_CERTIFICATE_DAYS } from '../domain/saml-sp-key';
import { SamlStore } from '../domain/saml.store';

/** A key pair as admins and the audit log see it: never the private key. */
export interface SpKeyView {
  id: string;
  certificate: string;
  /** SHA-256 of the certificate (DER), hex: what IdP consoles show. */
  fingerprint: string;
  current: boolean;
  createdAt: Date;
  retireAt: Date | null;
}

/**
 * The organization's service-provider key pairs: made on first use, rotated by an admin with
 * an overlap during which the previous pair still decrypts and stays published.
 */
@Injectable()
export class SamlSpKeysService {
  private readonly logger = new Logger('Saml');

  constructor(
    private readonly config: AppConfig,
    private readonly store: SamlStore,
    private readonly subscriptions: SubscriptionService,
    private readonly audit: AuditTrail,
  ) {}

  /** The pairs in force, the current one first; the organization's first pair is made here. */
  async live(organizationId: string): Promise<SamlSpKey[]> {
    let keys = liveKeys(await this.store.spKeys(organizationId));
    if (!keys.some((k) => k.isCurrent)) {
      // Two instances may race here: the store keeps one current pair, and both read it back.
      await this.store.addSpKey(SamlSpKey.create(organizationId, await this.newPair(organizationId)));
      keys = liveKeys(await this.store.spKeys(organizationId));
    }
    return keys;
  }

  async list(caller: Principal): Promise<SpKeyView[]> {
    await this.subscriptions.assertFeature(caller.organizationId, SAML_FEATURE);
    return (await this.live(caller.organizationId)).map(view);
  }

  /**
   * A new current pair; the current one so far keeps decrypting and stays in the metadata for
   * `overlapMs` (new requests are signed with the new key at once).
   */
  @Transactional()
  async rotate(caller: Principal, overlapMs = DEFAULT_OVERLAP_MS): Promise<SpKeyView[]> {
    await this.subscriptions.assertFeature(caller.organizationId, SAML_FEATURE);
    const before = await this.live(caller.organizationId);
    const current = before.find((k) => k.isCurrent)!;
    const pair = await this.newPair(caller.organizationId);
    const now = new Date();
    await this.store.retireSpKey(caller.organizationId, current.props.id, new Date(now.getTime() + overlapMs));
    // A rotation racing this one and committing first keeps its pair: this one then adds none and records nothing.
    const added = await this.store.addSpKey(SamlSpKey.create(caller.organizationId, pair, now));
    const after = liveKeys(await this.store.spKeys(caller.organizationId), now);
    if (added) await this.recordRotation(caller, before, after);
    this.logger.log({ msg: 'SAML SP keys rotated', organization: caller.organizationId, by: caller.userId, overlapMs });
    return after.map(view);
  }

  /** Ends the overlap now: the rotated-out pairs stop decrypting and leave the metadata. */
  @Transactional()
  async retirePrevious(caller: Principal): Promise<SpKeyView[]> {
    await this.subscriptions.assertFeature(caller.organizationId, SAML_FEATURE);
    const before = await this.live(caller.organizationId);
    const previous = before.filter((k) => !k.isCurrent);
    if (!previous.length) throw new DomainError('NOT_FOUND', 'No previous SAML key pair is in its overlap');
    const now = new Date();
    for (const key of previous) await this.store.retireSpKey(caller.organizationId, key.props.id, now);
    const after = liveKeys(await this.store.spKeys(caller.organizationId), now);
    await this.recordRotation(caller, before, after);
    return after.map(view);
  }

  private recordRotation(caller: Principal, before: SamlSpKey[], after: SamlSpKey[]): Promise<void> {
    // Only what is public: ids, fingerprints and times; the private keys never enter the log.
    const publicView = (keys: SamlSpKey[]) => keys.map((k) => ({ ...view(k), certificate: undefined }));
    return this.audit.record({
      organizationId: caller.organizationId,
      action: 'saml.sp_keys_rotated',
      target: { type: 'saml_sp_keys', id: caller.organizationId, name: view(after[0]).fingerprint },
      changes: { before: { keys: publicView(before) }, after: { keys: publicView(after) } },
    });
  }

  private newPair(organizationId: string): Promise<{ certificate: string; privateKey: string }> {
    const host = new URL(this.config.publicUrl).hostname;
    return selfSignedCertificate(`${host} SAML SP ${organizationId}`.slice(0, 64), SP_CERTIFICATE_DAYS);
  }
}

function view(key: SamlSpKey): SpKeyView {
  const { id, certificate, createdAt, retireAt } = key.props;
  // Over the PEM's DER: a pair stored before serials were kept minimal is one node:crypto cannot parse.
  const fingerprint = createHash('sha256').update(pemDer(certificate)).digest('hex');
  return { id, certificate, fingerprint, current: key.isCurrent, createdAt, retireAt };
}

function pemDer(pem: string): Buffer {
  return Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
}
