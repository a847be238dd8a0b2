import { createSign, generateKeyPair, KeyObject, randomBytes, X509Certificate } from 'node:crypto';
import { promisify } from 'node:util';

const generate = promisify(generateKeyPair);
const SHA256_WITH_RSA = '1.2.840.113549.1.1.11';
const COMMON_NAME = '2.5.4.3';

export interface KeyPairWithCertificate {
  /** PKCS#8 PEM. */
  privateKey: string;
  /** X.509 PEM, self-signed, sha256WithRSAEncryption. */
  certificate: string;
}

/**
 * A fresh RSA key pair and a self-signed X.509 v3 certificate for it, made with node:crypto
 * alone (node:crypto signs but does not build certificates, so the few DER structures a
 * certificate needs are written here). For SAML, where the certificate only carries the
 * public key: nobody checks its chain.
 */
export async function selfSignedCertificate(commonName: string, validDays: number, bits = 2048): Promise<KeyPairWithCertificate> {
  const { privateKey, publicKey } = await generate('rsa', { modulusLength: bits });
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    certificate: readBack(certificateFor(privateKey, publicKey, commonName, validDays, randomBytes(16))),
  };
}

/**
 * A positive serial in minimal DER from 16 random bytes: the top bit cleared (not negative) and
 * the next one set, so the first byte is never 0x00 (a leading zero byte before a byte under
 * 0x80 is padding DER forbids, and node:crypto refuses to read such a certificate back).
 */
export function certificateSerial(random: Buffer): Buffer {
  const serial = Buffer.from(random);
  serial[0] = (serial[0] & 0x7f) | 0x40;
  return serial;
}

/** The certificate, once node:crypto has read it back: none is handed out that cannot be. */
function readBack(certificate: string): string {
  new X509Certificate(certificate);
  return certificate;
}

export function certificateFor(privateKey: KeyObject, publicKey: KeyObject, commonName: string, validDays: number, random: Buffer): string {
  const now = Date.now();
  const algorithm = sequence(oid(SHA256_WITH_RSA), Buffer.from([0x05, 0x00]));
  const name = sequence(set(sequence(oid(COMMON_NAME), tlv(0x0c, Buffer.from(commonName, 'utf8')))));
  const serial = certificateSerial(random);
  const tbs = sequence(
    tlv(0xa0, tlv(0x02, Buffer.from([0x02]))),
    tlv(0x02, serial),
    algorithm,
    name,
    sequence(time(new Date(now - 60_000)), time(new Date(now + validDays * 86_400_000))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
  );
  const signature = createSign('sha256').update(tbs).sign(privateKey);
  const der = sequence(tbs, algorithm, tlv(0x03, Buffer.concat([Buffer.from([0x00]), signature])));
  const body = der
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n');
  return `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`;
}

function tlv(tag: number, value: Buffer): Buffer {
  const length = value.length;
  let head: Buffer;
  if (length < 0x80) head = Buffer.from([tag, length]);
  else {
    const bytes: number[] = [];
    for (let n = length; n > 0; n >>= 8) bytes.unshift(n & 0xff);
    head = Buffer.from([tag, 0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([head, value]);
}

const sequence = (...parts: Buffer[]) => tlv(0x30, Buffer.concat(parts));
const set = (...parts: Buffer[]) => tlv(0x31, Buffer.concat(parts));

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * a + b];
  for (const n of rest) {
    const chunk = [n & 0x7f];
    for (let v = n >> 7; v > 0; v >>= 7) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime until 2049, GeneralizedTime after (RFC 5280 §4.1.2.5). */
function time(date: Date): Buffer {
  const iso = date.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z';
  return date.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2), 'ascii')) : tlv(0x18, Buffer.from(iso, 'ascii'));
}
