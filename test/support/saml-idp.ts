import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { DOMParser } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';

/**
 * A real SAML 2.0 identity provider for the e2e specs: its own RSA key and self-signed
 * certificate, and responses signed with xml-crypto as an IdP signs them (exclusive c14n,
 * enveloped signature, `<ds:Signature>` right after the `<saml:Issuer>`). The attack helpers
 * below take such a signed response and break it the ways attackers do.
 */

export interface Signer {
  privateKey: string;
  certificate: string;
}

export interface TestIdp extends Signer {
  name: string;
  entityId: string;
  ssoUrl: string;
}

export interface SamlResponseOptions {
  idp: TestIdp;
  /** Who signs; the IdP itself unless a test wants "signed by another key". */
  signer?: Signer;
  /** The SP's ACS URL (Response Destination and, unless `recipient` is given, SubjectConfirmationData Recipient). */
  destination: string;
  /** SubjectConfirmationData Recipient; defaults to destination. */
  recipient?: string;
  /** The SP's entity id (AudienceRestriction). */
  audience: string;
  /** The ID of the AuthnRequest answered; omitted for an IdP-initiated response. */
  inResponseTo?: string;
  /** Defaults to idp.entityId. */
  issuer?: string;
  /** The email, XML-escaped into the NameID. */
  nameId?: string;
  /** Raw XML for the NameID content, unescaped (comment injection). Wins over nameId. */
  nameIdXml?: string;
  attributes?: Record<string, string | string[]>;
  /** Defaults to now − 1 min. */
  notBefore?: Date;
  /** Defaults to now + 5 min; for Conditions and SubjectConfirmationData. */
  notOnOrAfter?: Date;
  /** SubjectConfirmationData NotOnOrAfter alone; defaults to notOnOrAfter. */
  subjectNotOnOrAfter?: Date;
  /** Defaults to now. */
  issueInstant?: Date;
  /** Defaults to true. */
  signAssertion?: boolean;
  /** Defaults to false. */
  signResponse?: boolean;
  /** sha256 (rsa-sha256, sha256 digest; the default) or sha1 (rsa-sha1, sha1 digest). */
  algorithm?: 'sha256' | 'sha1';
}

const NS = {
  samlp: 'urn:oasis:names:tc:SAML:2.0:protocol',
  saml: 'urn:oasis:names:tc:SAML:2.0:assertion',
  xs: 'http://www.w3.org/2001/XMLSchema',
  xsi: 'http://www.w3.org/2001/XMLSchema-instance',
  ds: 'http://www.w3.org/2000/09/xmldsig#',
  md: 'urn:oasis:names:tc:SAML:2.0:metadata',
};
const EXC_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';
const ALGORITHMS = {
  sha256: { signature: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256', digest: 'http://www.w3.org/2001/04/xmlenc#sha256' },
  sha1: { signature: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1', digest: 'http://www.w3.org/2000/09/xmldsig#sha1' },
} as const;
const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
const ASSERTION_RE = /<saml:Assertion[\s>][\s\S]*?<\/saml:Assertion>/;
const NAME_ID_RE = /(<saml:NameID[^>]*>)([\s\S]*?)(<\/saml:NameID>)/;
const SIGNATURE_RE = /<ds:Signature[\s>][\s\S]*?<\/ds:Signature>/;

/** A fresh RSA-2048 key and a self-signed certificate, made by openssl. */
export function createTestIdp(name = 'idp'): TestIdp {
  const dir = mkdtempSync(join(tmpdir(), 'saml-idp-'));
  try {
    const keyFile = join(dir, 'k.pem');
    const certFile = join(dir, 'c.pem');
    execFileSync(
      '/usr/bin/openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${name}`, '-keyout', keyFile, '-out', certFile],
      { stdio: 'pipe' },
    );
    return {
      name,
      entityId: `https://${name}.idp.test/entity`,
      ssoUrl: `https://${name}.idp.test/sso`,
      privateKey: readFileSync(keyFile, 'utf8'),
      certificate: readFileSync(certFile, 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** IdP metadata (an EntityDescriptor with the signing certificate and the Redirect SSO URL). */
export function idpMetadataXml(idp: TestIdp): string {
  return [
    `<md:EntityDescriptor xmlns:md="${NS.md}" xmlns:ds="${NS.ds}" entityID="${escapeXml(idp.entityId)}">`,
    `<md:IDPSSODescriptor WantAuthnRequestsSigned="false" protocolSupportEnumeration="${NS.samlp}">`,
    '<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data>',
    `<ds:X509Certificate>${pemBody(idp.certificate)}</ds:X509Certificate>`,
    '</ds:X509Data></ds:KeyInfo></md:KeyDescriptor>',
    `<md:NameIDFormat>${EMAIL_FORMAT}</md:NameIDFormat>`,
    `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${escapeXml(idp.ssoUrl)}"/>`,
    '</md:IDPSSODescriptor>',
    '</md:EntityDescriptor>',
  ].join('');
}

/** A `<samlp:Response>` with one `<saml:Assertion>`, signed as the options say. */
export function samlResponseXml(options: SamlResponseOptions): string {
  const now = Date.now();
  const issueInstant = (options.issueInstant ?? new Date(now)).toISOString();
  const notBefore = (options.notBefore ?? new Date(now - 60_000)).toISOString();
  const notOnOrAfter = (options.notOnOrAfter ?? new Date(now + 5 * 60_000)).toISOString();
  const subjectNotOnOrAfter = options.subjectNotOnOrAfter?.toISOString() ?? notOnOrAfter;
  const issuer = escapeXml(options.issuer ?? options.idp.entityId);
  const responseId = newId();
  const assertionId = newId();
  const inResponseTo = options.inResponseTo === undefined ? '' : ` InResponseTo="${escapeXml(options.inResponseTo)}"`;
  const nameId = options.nameIdXml ?? escapeXml(options.nameId ?? '');
  const attributes = Object.entries(options.attributes ?? {}).map(([name, value]) => {
    const values = (Array.isArray(value) ? value : [value]).map(
      (v) => `<saml:AttributeValue xsi:type="xs:string">${escapeXml(v)}</saml:AttributeValue>`,
    );
    return `<saml:Attribute Name="${escapeXml(name)}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:basic">${values.join('')}</saml:Attribute>`;
  });

  const assertion = [
    `<saml:Assertion xmlns:saml="${NS.saml}" xmlns:xs="${NS.xs}" xmlns:xsi="${NS.xsi}" ID="${assertionId}" Version="2.0" IssueInstant="${issueInstant}">`,
    `<saml:Issuer>${issuer}</saml:Issuer>`,
    '<saml:Subject>',
    `<saml:NameID Format="${EMAIL_FORMAT}">${nameId}</saml:NameID>`,
    '<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">',
    `<saml:SubjectConfirmationData NotOnOrAfter="${subjectNotOnOrAfter}" Recipient="${escapeXml(options.recipient ?? options.destination)}"${inResponseTo}/>`,
    '</saml:SubjectConfirmation>',
    '</saml:Subject>',
    `<saml:Conditions NotBefore="${notBefore}" NotOnOrAfter="${notOnOrAfter}">`,
    `<saml:AudienceRestriction><saml:Audience>${escapeXml(options.audience)}</saml:Audience></saml:AudienceRestriction>`,
    '</saml:Conditions>',
    `<saml:AuthnStatement AuthnInstant="${issueInstant}" SessionIndex="${newId()}">`,
    '<saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext>',
    '</saml:AuthnStatement>',
    attributes.length ? `<saml:AttributeStatement>${attributes.join('')}</saml:AttributeStatement>` : '',
    '</saml:Assertion>',
  ].join('');
  let xml = [
    `<samlp:Response xmlns:samlp="${NS.samlp}" xmlns:saml="${NS.saml}" ID="${responseId}" Version="2.0" IssueInstant="${issueInstant}" Destination="${escapeXml(options.destination)}"${inResponseTo}>`,
    `<saml:Issuer>${issuer}</saml:Issuer>`,
    '<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>',
    assertion,
    '</samlp:Response>',
  ].join('');

  const signer = options.signer ?? options.idp;
  const algorithm = options.algorithm ?? 'sha256';
  // The assertion first: a response signature then covers the signed assertion.
  if (options.signAssertion ?? true) {
    xml = sign(xml, signer, algorithm, `//*[local-name(.)='Assertion' and @ID='${assertionId}']`);
  }
  if (options.signResponse ?? false) {
    xml = sign(xml, signer, algorithm, `/*[local-name(.)='Response' and @ID='${responseId}']`);
  }
  return xml;
}

/** The options of an unsigned response (neither the assertion nor the response signed). */
export function unsigned(options: SamlResponseOptions): SamlResponseOptions {
  return { ...options, signAssertion: false, signResponse: false };
}

/** The SAMLResponse form field: base64 of the XML. */
export function encodeResponse(xml: string): string {
  return Buffer.from(xml, 'utf8').toString('base64');
}

/** Replaces the (first) NameID's content of an already signed response. */
export function tamperNameId(xml: string, value: string): string {
  if (!NAME_ID_RE.test(xml)) throw new Error('no NameID to tamper with');
  return xml.replace(NAME_ID_RE, (_all, open: string, _old: string, close: string) => `${open}${escapeXml(value)}${close}`);
}

/**
 * XML signature wrapping: a second, unsigned copy of the assertion with another ID, whose
 * NameID (and every other occurrence of the original email in it, such as an `email`
 * attribute) is `evilNameId`. The signed assertion stays intact and still verifies; the copy
 * goes into the Response `before` it (the default) or `after` it, or, with `extensions`, takes
 * its place while the signed one moves into `<samlp:Extensions>` (where a careless SP still
 * finds a valid signature).
 */
export function wrapSignature(xml: string, evilNameId: string, placement: 'before' | 'after' | 'extensions' = 'before'): string {
  const signed = ASSERTION_RE.exec(xml)?.[0];
  if (!signed) throw new Error('no assertion to wrap');
  const original = NAME_ID_RE.exec(signed)?.[2];
  if (original === undefined) throw new Error('no NameID in the assertion');
  let evil = signed
    .replace(SIGNATURE_RE, '')
    .replace(/ ID="[^"]*"/, ` ID="${newId()}"`)
    .replace(NAME_ID_RE, (_all, open: string, _old: string, close: string) => `${open}${escapeXml(evilNameId)}${close}`);
  if (original) evil = evil.split(original).join(escapeXml(evilNameId));
  const at = xml.indexOf(signed);
  const [head, tail] = [xml.slice(0, at), xml.slice(at + signed.length)];
  switch (placement) {
    case 'before':
      return head + evil + signed + tail;
    case 'after':
      return head + signed + evil + tail;
    case 'extensions': {
      // Extensions come right before Status in the Response (after Issuer and any Signature).
      const status = head.indexOf('<samlp:Status>');
      return `${head.slice(0, status)}<samlp:Extensions>${signed}</samlp:Extensions>${head.slice(status)}${evil}${tail}`;
    }
  }
}

/**
 * The ID of the AuthnRequest in the SP's redirect to the IdP
 * (`<ssoUrl>?SAMLRequest=<base64 of deflate-raw>&RelayState=...`, HTTP-Redirect binding).
 */
export function authnRequestId(location: string): string {
  const samlRequest = new URL(location).searchParams.get('SAMLRequest');
  if (!samlRequest) throw new Error(`no SAMLRequest in ${location}`);
  const xml = inflateRawSync(Buffer.from(samlRequest, 'base64')).toString('utf8');
  const request = new DOMParser().parseFromString(xml, 'text/xml').documentElement;
  if (!request || request.localName !== 'AuthnRequest') throw new Error(`not an AuthnRequest: ${xml}`);
  const id = request.getAttribute('ID');
  if (!id) throw new Error(`AuthnRequest without ID: ${xml}`);
  return id;
}

/** Verifies a signature of the XML with a certificate, for checking the builder itself. */
export function verifySignatures(xml: string, certificate: string): boolean[] {
  const doc = new DOMParser().parseFromString(xml, 'text/xml');
  const signatures = Array.from(doc.getElementsByTagNameNS(NS.ds, 'Signature'));
  return signatures.map((signature) => {
    const verifier = new SignedXml({ publicCert: certificate, getCertFromKeyInfo: () => null });
    verifier.loadSignature(signature);
    try {
      return verifier.checkSignature(xml);
    } catch {
      return false;
    }
  });
}

function sign(xml: string, signer: Signer, algorithm: 'sha256' | 'sha1', referenceXpath: string): string {
  const { signature, digest } = ALGORITHMS[algorithm];
  const signed = new SignedXml({
    privateKey: signer.privateKey,
    publicCert: signer.certificate,
    signatureAlgorithm: signature,
    canonicalizationAlgorithm: EXC_C14N,
  });
  signed.addReference({ xpath: referenceXpath, digestAlgorithm: digest, transforms: [ENVELOPED, EXC_C14N] });
  signed.computeSignature(xml, { prefix: 'ds', location: { reference: `${referenceXpath}/*[local-name(.)='Issuer']`, action: 'after' } });
  return signed.getSignedXml();
}

function newId(): string {
  return `_${randomBytes(16).toString('hex')}`;
}

function pemBody(pem: string): string {
  return pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
}

function escapeXml(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}
