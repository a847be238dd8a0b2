import { createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { certificateFor, certificateSerial, selfSignedCertificate } from './self-signed-certificate';

describe('selfSignedCertificate', () => {
  it('makes a certificate node:crypto parses, self-signed, for the key it returns, valid for the days asked', async () => {
    const { privateKey, certificate } = await selfSignedCertificate('sp.example.test', 365);
    const x509 = new X509Certificate(certificate);
    expect(x509.subject).toBe('CN=sp.example.test');
    expect(x509.issuer).toBe('CN=sp.example.test');
    expect(x509.verify(x509.publicKey)).toBe(true);
    expect(x509.checkPrivateKey(createPrivateKey(privateKey))).toBe(true);
    const days = (new Date(x509.validTo).getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(364);
    expect(days).toBeLessThan(366);
    expect(x509.serialNumber).toMatch(/^[0-9A-F]+$/);
  });
});

describe('certificateFor', () => {
  // Before the serial was kept minimal, 1 in 256 certificates began its serial with 0x00 and
  // node:crypto refused to read it back ("illegal padding"): the SP key rotation answered 500.
  it.each([
    ['a zero first byte', Buffer.alloc(16, 0x00)],
    ['a first byte under 0x80', Buffer.from([0x01, ...Buffer.alloc(15, 0xab)])],
    ['an all-ones serial', Buffer.alloc(16, 0xff)],
  ])('makes a certificate node:crypto reads back from %s of random serial', (_, random) => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const x509 = new X509Certificate(certificateFor(privateKey, publicKey, 'sp.example.test', 1, random));
    expect(x509.serialNumber).toHaveLength(32);
    expect(x509.verify(publicKey)).toBe(true);
  });

  it('keeps 126 bits of the random serial', () => {
    const serial = certificateSerial(Buffer.alloc(16, 0x00));
    expect(serial[0]).toBe(0x40);
    expect(certificateSerial(Buffer.alloc(16, 0xff))[0]).toBe(0x7f);
    expect(serial.subarray(1)).toEqual(Buffer.alloc(15, 0x00));
  });
});
