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
  const doc = parse(Buffer.from(samlResponse, 'base64').toString('utf8'));
  // Not XML: node-saml refuses it with its own reason.
  if (!doc) return null;
  for (const name of ['SignatureMethod', 'DigestMethod']) {
    for (const element of Array.from(doc.getElementsByTagNameNS(DS, name)) as Element[]) {
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

function parse(xml: string | undefined): Document | null {
  if (!xml) return null;
  try {
    return new DOMParser({ onError: () => undefined }).parseFromString(xml, 'text/xml');
  } catch {
    return null;
  }
}
