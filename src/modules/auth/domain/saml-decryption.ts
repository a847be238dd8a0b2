import { constants, privateDecrypt } from 'node:crypto';
import { DOMParser, Element } from '@xmldom/xmldom';

const XENC = 'http://www.w3.org/2001/04/xmlenc#';
const DS = 'http://www.w3.org/2000/09/xmldsig#';
const OAEP = new Set(['http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p', 'http://www.w3.org/2009/xmlenc11#rsa-oaep']);
const DIGESTS: Record<string, string> = {
  'http://www.w3.org/2000/09/xmldsig#sha1': 'sha1',
  'http://www.w3.org/2001/04/xmlenc#sha256': 'sha256',
  'http://www.w3.org/2001/04/xmldsig-more#sha384': 'sha384',
  'http://www.w3.org/2001/04/xmlenc#sha512': 'sha512',
};

/**
 * Which of our private keys an encrypted assertion was encrypted to: the first of `privateKeys`
 * (PEM, the current one first) that unwraps the assertion's EncryptedKey. RSA-OAEP fails with
 * a wrong key, so the answer is certain; for any other key transport (RSA PKCS#1 v1.5, which
 * cannot tell), and for a response without an EncryptedAssertion, the current key. node-saml
 * then decrypts and verifies with the key chosen here.
 */
export function decryptionKeyFor(samlResponseXml: string, privateKeys: readonly string[]): string | undefined {
  if (privateKeys.length < 2) return privateKeys[0];
  let doc;
  try {
    doc = new DOMParser({ onError: () => undefined }).parseFromString(samlResponseXml, 'text/xml');
  } catch {
    return privateKeys[0];
  }
  const encryptedKey = doc.getElementsByTagNameNS(XENC, 'EncryptedKey')[0] as Element | undefined;
  const method = encryptedKey ? (Array.from(encryptedKey.getElementsByTagNameNS(XENC, 'EncryptionMethod')) as Element[])[0] : undefined;
  const algorithm = method?.getAttribute('Algorithm') ?? '';
  const cipherValue = encryptedKey
    ? (Array.from(encryptedKey.getElementsByTagNameNS(XENC, 'CipherValue')) as Element[])[0]?.textContent
    : undefined;
  if (!encryptedKey || !method || !cipherValue || !OAEP.has(algorithm)) return privateKeys[0];
  const digest = (Array.from(method.getElementsByTagNameNS(DS, 'DigestMethod')) as Element[])[0]?.getAttribute('Algorithm');
  const oaepHash = (digest && DIGESTS[digest]) || 'sha1';
  const wrapped = Buffer.from(cipherValue.replace(/\s+/g, ''), 'base64');
  return (
    privateKeys.find((key) => {
      try {
        privateDecrypt({ key, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash }, wrapped);
        return true;
      } catch {
        return false;
      }
    }) ?? privateKeys[0]
  );
}

/** Whether the response carries its assertion encrypted (an EncryptedAssertion under the Response). */
export function hasEncryptedAssertion(samlResponseXml: string): boolean {
  try {
    const doc = new DOMParser({ onError: () => undefined }).parseFromString(samlResponseXml, 'text/xml');
    const root = doc.documentElement;
    return !!root && Array.from(root.childNodes).some((n) => (n as Element).localName === 'EncryptedAssertion');
  } catch {
    return false;
  }
}
