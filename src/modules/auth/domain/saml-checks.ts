import { Document, DOMParser, Element } from '@xmldom/xmldom';

const DS = 'http://www.w3.org/2000/09/xmldsig#';
const ASSERTION = 'urn:oasis:names:tc:SAML:2.0:assertion';
/** Signature and digest algorithms too weak to trust (SHA-1, MD5). */
const WEAK = /(sha1|md5)$/i;

/**
 * The weakest part node-saml does not refuse by itself: a signature made or digested with
 * SHA-1 (or MD5). Answers why the response must be refused, or null.
 */
export function weakAlgorithm(samlResponse: string): string | null {
  return weakAlgorithmIn(Buffer.from(samlResponse, 'base64').toString('utf8'));
}

/**
 * weakAlgorithm() of XML (a decrypted assertion, whose signature could not be seen before).
 * Only signatures count: the digest of an RSA-OAEP key transport (SHA-1 in MGF1 by default) is
 * not a signature's and is no weakness there.
 */
export function weakAlgorithmIn(xml: string): string | null {
  const doc = parse(xml);
  // Not XML: node-saml refuses it with its own reason.
  if (!doc) return null;
  for (const name of ['SignatureMethod', 'DigestMethod']) {
    for (const element of Array.from(doc.getElementsByTagNameNS(DS, name)) as Element[]) {
      const parent = element.parentNode as Element | null;
      if (parent?.localName !== (name === 'SignatureMethod' ? 'SignedInfo' : 'Reference')) continue;
      const algorithm = element.getAttribute('Algorithm') ?? '';
      if (WEAK.test(algorithm)) return `The response is signed with a weak algorithm (${algorithm}); SHA-256 or better is required`;
    }
  }
  return null;
}

/** What node-saml hands over for a response it validated (its Profile), as far as these checks read it. */
export interface ValidatedResponse {
  issuer?: string;
  getAssertionXml?(): string;
  getSamlResponseXml?(): string;
}

/**
 * What node-saml leaves to its caller for a login response, checked on what it verified: the
 * assertion's issuer is the configured IdP, its bearer confirmation names our ACS as the
 * recipient, and the response is addressed (Destination) to our ACS. Answers the problem, or null.
 */
export function addressingProblem(profile: ValidatedResponse, expected: { idpEntityId: string; acsUrl: string }): string | null {
  if (profile.issuer !== expected.idpEntityId) return 'The assertion was not issued by the configured IdP';
  const assertion = parse(profile.getAssertionXml?.());
  const recipients = assertion
    ? (Array.from(assertion.getElementsByTagNameNS(ASSERTION, 'SubjectConfirmationData')) as Element[]).map((e) =>
        e.getAttribute('Recipient'),
      )
    : [];
  if (!recipients.length || recipients.some((r) => r !== expected.acsUrl)) return 'The assertion is meant for another recipient';
  const response = parse(profile.getSamlResponseXml?.());
  if (response?.documentElement?.getAttribute('Destination') !== expected.acsUrl) return 'The response is addressed to another destination';
  return null;
}

/**
 * The ID of a validated assertion and until when it could be accepted (the latest NotOnOrAfter
 * of its conditions and bearer confirmations; `fallback` without any), for the replay cache of
 * IdP-initiated sign-ins. Null when the assertion has no ID.
 */
export function assertionIdentity(assertionXml: string | undefined, fallback: Date): { id: string; expiresAt: Date } | null {
  const assertion = parse(assertionXml)?.documentElement;
  const id = assertion?.getAttribute('ID');
  if (!assertion || !id) return null;
  const times = [
    ...(Array.from(assertion.getElementsByTagNameNS(ASSERTION, 'Conditions')) as Element[]),
    ...(Array.from(assertion.getElementsByTagNameNS(ASSERTION, 'SubjectConfirmationData')) as Element[]),
  ]
    .map((e) => Date.parse(e.getAttribute('NotOnOrAfter') ?? ''))
    .filter((t) => !Number.isNaN(t));
  return { id, expiresAt: times.length ? new Date(Math.max(...times)) : fallback };
}

/**
 * What node-saml leaves unchecked in a logout message (LogoutRequest or LogoutResponse) whose
 * signature it verified: it was issued by the configured IdP, and, when it names a
 * Destination, it is ours. Answers the problem, or null.
 */
export function logoutMessageProblem(xml: string, expected: { idpEntityId: string; sloUrl: string }): string | null {
  const message = parse(xml)?.documentElement;
  if (!message || !['LogoutRequest', 'LogoutResponse'].includes(message.localName ?? '')) return 'Not a logout message';
  const issuer = (Array.from(message.childNodes) as Element[]).find((n) => n.localName === 'Issuer');
  if ((issuer?.textContent ?? '').trim() !== expected.idpEntityId) return 'The logout message was not issued by the configured IdP';
  const destination = message.getAttribute('Destination');
  if (destination && destination !== expected.sloUrl) return 'The logout message is addressed to another destination';
  return null;
}

function parse(xml: string | undefined): Document | null {
  if (!xml) return null;
  try {
    return new DOMParser({ onError: () => undefined }).parseFromString(xml, 'text/xml');
  } catch {
    return null;
  }
}
