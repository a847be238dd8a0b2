import { Document, DOMParser, Element } from '@xmldom/xmldom';
import { DomainError } from '../../../shared/errors/domain-error';
import { SamlSettings } from './saml-settings';

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const DS = 'http://www.w3.org/2000/09/xmldsig#';
const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';

/** The most metadata XML read, from a file or a URL: a federation's aggregate is not one IdP's metadata. */
export const MAX_METADATA_BYTES = 200_000;

/**
 * The IdP's entity id, HTTP-Redirect SSO URL, signing certificates and single logout URL (HTTP-Redirect;
 * null without one) from its metadata XML. `path` names the field problems are reported on.
 */
export function settingsFromMetadata(
  xml: string,
  path = 'idpMetadataXml',
): Pick<SamlSettings, 'idpEntityId' | 'idpSsoUrl' | 'idpCertificates' | 'idpSloUrl'> {
  const invalid = (message: string) => new DomainError('VALIDATION_FAILED', 'The IdP metadata is not usable', [{ path, message }]);
  if (Buffer.byteLength(xml, 'utf8') > MAX_METADATA_BYTES) throw invalid(`larger than ${MAX_METADATA_BYTES} bytes`);
  // No DTDs: an entity declaration is how XML bombs and external entities get in.
  if (/<!DOCTYPE/i.test(xml)) throw invalid('a DOCTYPE is not allowed');
  let doc: Document;
  try {
    doc = new DOMParser({
      onError: (level, message) => {
        if (level !== 'warning') throw new Error(message);
      },
    }).parseFromString(xml, 'text/xml');
  } catch (error) {
    throw invalid(`not XML: ${(error as Error).message}`);
  }
  const entity = doc.getElementsByTagNameNS(MD, 'EntityDescriptor')[0];
  const idp = doc.getElementsByTagNameNS(MD, 'IDPSSODescriptor')[0];
  if (!entity || !idp) throw invalid('no EntityDescriptor with an IDPSSODescriptor');
  const elements = (parent: Element, ns: string, name: string): Element[] => Array.from(parent.getElementsByTagNameNS(ns, name));
  const sso = elements(idp, MD, 'SingleSignOnService').find((e) => e.getAttribute('Binding') === REDIRECT_BINDING);
  const slo = elements(idp, MD, 'SingleLogoutService').find((e) => e.getAttribute('Binding') === REDIRECT_BINDING);
  const certificates = elements(idp, MD, 'KeyDescriptor')
    .filter((k) => !k.getAttribute('use') || k.getAttribute('use') === 'signing')
    .flatMap((k) => elements(k, DS, 'X509Certificate'))
    .map((c) => pem((c.textContent ?? '').replace(/\s+/g, '')));
  if (!sso?.getAttribute('Location')) throw invalid('no SingleSignOnService with the HTTP-Redirect binding');
  if (!certificates.length) throw invalid('no signing certificate');
  return {
    idpEntityId: entity.getAttribute('entityID') ?? '',
    idpSsoUrl: sso.getAttribute('Location')!,
    idpCertificates: certificates.slice(0, 2),
    idpSloUrl: slo?.getAttribute('Location') || null,
  };
}

function pem(base64: string): string {
  return `-----BEGIN CERTIFICATE-----\n${base64.match(/.{1,64}/g)?.join('\n') ?? ''}\n-----END CERTIFICATE-----\n`;
}
