import { createPrivateKey, X509Certificate } from 'node:crypto';
import { selfSignedCertificate } from './self-signed-certificate';

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
