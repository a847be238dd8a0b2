// A SAML 2.0 identity provider in its own process, for test/saml-idp.e2e-spec.ts: samlify as
// the IdP, with its own RSA key and self-signed certificate, on a loopback port. The spec drives
// it over HTTP; the service under test talks to it only through SAML messages and metadata.
//
//   node test/support/saml-idp-process.mjs      prints {"port":N} once listening
//
// Routes (JSON answers unless said otherwise):
//   GET  /metadata                   the IdP metadata XML (SSO and SLO, HTTP-Redirect binding)
//   POST /sp {metadataUrl, encrypt, encryptionCert: 'first'|'last'}
//                                    fetches the SP metadata over HTTP and trusts that SP from now on
//   GET  /sso?SAMLRequest&RelayState&SigAlg&Signature   (header x-login-email: who signs in)
//                                    verifies the signed AuthnRequest; 200 {verified, requestId,
//                                    SAMLResponse, RelayState} or 400 {verified: false, error}
//   GET  /initiate?email=            an IdP-initiated response (no InResponseTo)
//   GET  /logout-request?email=&sessionIndex=&signed=0|1
//                                    a LogoutRequest to the SP (HTTP-Redirect): {url}
//   GET  /slo?SAMLRequest|SAMLResponse&...   a logout message from the SP, verified
//   GET  /seen                        what the IdP saw last: {authnRequests, logoutRequests, logoutResponses}
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import samlify from 'samlify';

// Schema validation is not what these tests are about: accept every message samlify parsed.
samlify.setSchemaValidator({ validate: async () => 'skipped' });

const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
const REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';

function keyPair() {
  const dir = mkdtempSync(join(tmpdir(), 'samlify-idp-'));
  try {
    execFileSync(
      '/usr/bin/openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=samlify-idp',
        '-keyout',
        join(dir, 'k.pem'),
        '-out',
        join(dir, 'c.pem'),
      ],
      { stdio: 'pipe' },
    );
    return { privateKey: readFileSync(join(dir, 'k.pem'), 'utf8'), certificate: readFileSync(join(dir, 'c.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const { privateKey, certificate } = keyPair();
const seen = { authnRequests: [], logoutRequests: [], logoutResponses: [] };
let base = '';
let idp;
let idpEncrypting;
/** The SP as its metadata says, and the same SP asking for unsigned logout requests (the "unsigned" attack). */
let sp;
let spUnsigned;

function identityProvider(encrypt) {
  return samlify.IdentityProvider({
    entityID: `${base}/metadata`,
    signingCert: certificate,
    privateKey,
    wantAuthnRequestsSigned: true,
    wantLogoutRequestSigned: true,
    wantLogoutResponseSigned: true,
    isAssertionEncrypted: encrypt,
    dataEncryptionAlgorithm: 'http://www.w3.org/2009/xmlenc11#aes256-gcm',
    keyEncryptionAlgorithm: 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p',
    requestSignatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
    nameIDFormat: [EMAIL_FORMAT],
    singleSignOnService: [{ Binding: REDIRECT, Location: `${base}/sso` }],
    singleLogoutService: [{ Binding: REDIRECT, Location: `${base}/slo` }],
  });
}

/** samlify reads one certificate per use: with two (a rotation's overlap), pick one. */
function pinCertificates(entity, encryptionCert) {
  const certs = entity.entityMeta.meta.certificate;
  const pick = (value, which) => (Array.isArray(value) ? (which === 'last' ? value[value.length - 1] : value[0]) : value);
  certs.signing = pick(certs.signing, 'first');
  certs.encryption = pick(certs.encryption, encryptionCert);
  return { signingCerts: [].concat(entity.entityMeta.meta.certificate.signing).length };
}

function escapeXml(value) {
  return String(value).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A login response of our own making (samlify signs and encrypts it): a SessionIndex, attributes, InResponseTo only when answering. */
async function loginResponse(requestId, email, relayState) {
  const entity = encrypting ? idpEncrypting : idp;
  const sessionIndex = `_session-${randomUUID()}`;
  const acs = sp.entityMeta.getAssertionConsumerService(samlify.Constants.wording.binding.post);
  const response = await entity.createLoginResponse(
    sp,
    requestId ? { extract: { request: { id: requestId } } } : {},
    'post',
    { email },
    {
      relayState,
      customTagReplacement: () => {
        const now = new Date();
        const later = new Date(now.getTime() + 5 * 60_000).toISOString();
        const id = `_${randomUUID()}`;
        const inResponseTo = requestId ? ` InResponseTo="${escapeXml(requestId)}"` : '';
        const context =
          `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${id}" Version="2.0" IssueInstant="${now.toISOString()}" Destination="${escapeXml(acs)}"${inResponseTo}>` +
          `<saml:Issuer>${base}/metadata</saml:Issuer><samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
          `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_${randomUUID()}" Version="2.0" IssueInstant="${now.toISOString()}"><saml:Issuer>${base}/metadata</saml:Issuer>` +
          `<saml:Subject><saml:NameID Format="${EMAIL_FORMAT}">${escapeXml(email)}</saml:NameID><saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">` +
          `<saml:SubjectConfirmationData NotOnOrAfter="${later}" Recipient="${escapeXml(acs)}"${inResponseTo}/></saml:SubjectConfirmation></saml:Subject>` +
          `<saml:Conditions NotBefore="${new Date(now.getTime() - 60_000).toISOString()}" NotOnOrAfter="${later}"><saml:AudienceRestriction><saml:Audience>${escapeXml(sp.entityMeta.getEntityID())}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
          `<saml:AuthnStatement AuthnInstant="${now.toISOString()}" SessionIndex="${sessionIndex}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
          `<saml:AttributeStatement><saml:Attribute Name="email"><saml:AttributeValue>${escapeXml(email)}</saml:AttributeValue></saml:Attribute></saml:AttributeStatement>` +
          '</saml:Assertion></samlp:Response>';
        return { id, context };
      },
    },
  );
  return { SAMLResponse: response.context, RelayState: relayState ?? null, sessionIndex, encrypted: encrypting };
}

let encrypting = false;

/** The redirect binding's signed octet string, from the raw query (samlify verifies against it). */
function octetString(rawQuery, kind) {
  const params = new Map(rawQuery.split('&').map((p) => [p.split('=')[0], p]));
  return [params.get(kind), params.get('RelayState'), params.get('SigAlg')].filter(Boolean).join('&');
}

async function handle(req, res) {
  const url = new URL(req.url, base);
  const rawQuery = req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '';
  const query = Object.fromEntries(url.searchParams);
  const json = (status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  try {
    if (req.method === 'GET' && url.pathname === '/metadata') {
      res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' });
      return res.end(idp.getMetadata());
    }
    if (req.method === 'GET' && url.pathname === '/seen') return json(200, seen);
    if (req.method === 'POST' && url.pathname === '/sp') {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      const { metadataUrl, encrypt = false, encryptionCert = 'first' } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const metadata = await (await fetch(metadataUrl)).text();
      sp = samlify.ServiceProvider({ metadata, wantLogoutRequestSigned: true, wantLogoutResponseSigned: true });
      spUnsigned = samlify.ServiceProvider({ metadata, wantLogoutRequestSigned: false });
      const pinned = pinCertificates(sp, encryptionCert);
      pinCertificates(spUnsigned, encryptionCert);
      encrypting = encrypt;
      return json(200, { entityId: sp.entityMeta.getEntityID(), ...pinned, encrypting });
    }
    if (req.method === 'GET' && url.pathname === '/sso') {
      let parsed;
      try {
        parsed = await idp.parseLoginRequest(sp, 'redirect', { query, octetString: octetString(rawQuery, 'SAMLRequest') });
      } catch (error) {
        seen.authnRequests.push({ verified: false, error: String(error?.message ?? error) });
        return json(400, { verified: false, error: String(error?.message ?? error) });
      }
      const requestId = parsed.extract.request.id;
      seen.authnRequests.push({ verified: true, requestId, sigAlg: query.SigAlg });
      const email = req.headers['x-login-email'];
      return json(200, { verified: true, requestId, sigAlg: query.SigAlg, ...(await loginResponse(requestId, email, query.RelayState)) });
    }
    if (req.method === 'GET' && url.pathname === '/initiate') {
      return json(200, await loginResponse(null, query.email, query.RelayState));
    }
    if (req.method === 'GET' && url.pathname === '/logout-request') {
      const target = query.signed === '0' ? spUnsigned : sp;
      const { context, id } = idp.createLogoutRequest(target, 'redirect', {
        logoutNameID: query.email,
        sessionIndex: query.sessionIndex ?? '',
      });
      return json(200, { url: context, id });
    }
    if (req.method === 'GET' && url.pathname === '/slo') {
      const kind = query.SAMLRequest ? 'SAMLRequest' : 'SAMLResponse';
      const request = { query, octetString: octetString(rawQuery, kind) };
      try {
        if (kind === 'SAMLRequest') {
          const parsed = await idp.parseLogoutRequest(sp, 'redirect', request);
          const entry = {
            verified: true,
            id: parsed.extract.request.id,
            nameID: parsed.extract.nameID,
            sessionIndex: parsed.extract.sessionIndex ?? null,
            sigAlg: query.SigAlg,
          };
          seen.logoutRequests.push(entry);
          const response = idp.createLogoutResponse(sp, parsed, 'redirect', { relayState: query.RelayState ?? '' });
          return json(200, { ...entry, logoutResponseUrl: response.context });
        }
        const parsed = await idp.parseLogoutResponse(sp, 'redirect', request);
        const entry = { verified: true, inResponseTo: parsed.extract.response?.inResponseTo ?? null, sigAlg: query.SigAlg };
        seen.logoutResponses.push(entry);
        return json(200, entry);
      } catch (error) {
        const entry = { verified: false, error: String(error?.message ?? error) };
        (kind === 'SAMLRequest' ? seen.logoutRequests : seen.logoutResponses).push(entry);
        return json(400, entry);
      }
    }
    json(404, { error: 'no such route' });
  } catch (error) {
    json(500, { error: String(error?.stack ?? error) });
  }
}

const server = createServer((req, res) => void handle(req, res));
server.listen(0, '127.0.0.1', () => {
  base = `http://127.0.0.1:${server.address().port}`;
  idp = identityProvider(false);
  idpEncrypting = identityProvider(true);
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
