import { ServiceProvider } from './saml-settings';

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const DS = 'http://www.w3.org/2000/09/xmldsig#';
const PROTOCOL = 'urn:oasis:names:tc:SAML:2.0:protocol';
const BINDING = {
  redirect: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect',
  post: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST',
};
const ENCRYPTION_METHODS = [
  'http://www.w3.org/2009/xmlenc11#aes256-gcm',
  'http://www.w3.org/2009/xmlenc11#aes128-gcm',
  'http://www.w3.org/2001/04/xmlenc#aes256-cbc',
  'http://www.w3.org/2001/04/xmlenc#aes128-cbc',
];

/**
 * Our SP metadata for one organization: every live certificate (the current one first) for
 * signing and for encryption, so an IdP that reads it during a rotation's overlap knows both;
 * single logout on both bindings; signed AuthnRequests and signed assertions required.
 */
export function serviceProviderMetadata(sp: ServiceProvider, certificates: readonly string[], nameIdFormat: string): string {
  const keyDescriptor = (use: 'signing' | 'encryption', pem: string) =>
    `<md:KeyDescriptor use="${use}"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${pemBody(pem)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>` +
    (use === 'encryption' ? ENCRYPTION_METHODS.map((a) => `<md:EncryptionMethod Algorithm="${a}"/>`).join('') : '') +
    '</md:KeyDescriptor>';
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<md:EntityDescriptor xmlns:md="${MD}" xmlns:ds="${DS}" entityID="${escape(sp.entityId)}">`,
    `<md:SPSSODescriptor protocolSupportEnumeration="${PROTOCOL}" AuthnRequestsSigned="true" WantAssertionsSigned="true">`,
    ...certificates.map((c) => keyDescriptor('signing', c)),
    ...certificates.map((c) => keyDescriptor('encryption', c)),
    `<md:SingleLogoutService Binding="${BINDING.redirect}" Location="${escape(sp.sloUrl)}"/>`,
    `<md:SingleLogoutService Binding="${BINDING.post}" Location="${escape(sp.sloUrl)}"/>`,
    `<md:NameIDFormat>${escape(nameIdFormat)}</md:NameIDFormat>`,
    `<md:AssertionConsumerService Binding="${BINDING.post}" Location="${escape(sp.acsUrl)}" index="1" isDefault="true"/>`,
    '</md:SPSSODescriptor>',
    '</md:EntityDescriptor>',
  ].join('\n');
}

function pemBody(pem: string): string {
  return pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
}

function escape(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
