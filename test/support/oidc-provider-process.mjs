// A real OpenID Connect provider (oidc-provider) for the OIDC specs, in a process of its own
// (oidc-provider is an ES module; the specs load the app as CommonJS). It listens on loopback and
// prints `listening <port>` once ready. Clients register themselves (POST /reg, open dynamic
// registration). Interactions are automated: the test posts the "login form"
// (POST /interaction/<uid>/login with email, name, groups; sub, the email unless given; email_verified
// "false", or "missing" for none) and consent is granted for what was asked.
// Test controls, under /__control:
//   POST /__control/rotate               a new signing key (new kid) replaces the old one
//   POST /__control/tamper {sub, claims}  the next ID token issued to `sub` is re-signed, with the
//                                         provider's own key, after these claims are changed
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import Provider from 'oidc-provider';
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, SignJWT } from 'jose';

const port = Number(process.env.OIDC_PORT ?? 0);
const accounts = new Map();
const tampering = new Map();
let signingKey;
let provider;
let issuer;

async function newKey() {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

// One store for every Provider instance of this process (a rotation builds a new one): registered clients survive it.
const stores = new Map();
class SharedAdapter {
  constructor(model) {
    if (!stores.has(model)) stores.set(model, new Map());
    this.items = stores.get(model);
  }
  async upsert(id, payload) {
    this.items.set(id, { ...payload });
  }
  async find(id) {
    return this.items.get(id);
  }
  async findByUid(uid) {
    return [...this.items.values()].find((item) => item.uid === uid);
  }
  async findByUserCode(userCode) {
    return [...this.items.values()].find((item) => item.userCode === userCode);
  }
  async consume(id) {
    const item = this.items.get(id);
    if (item) item.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id) {
    this.items.delete(id);
  }
  async revokeByGrantId(grantId) {
    for (const [id, item] of this.items) if (item.grantId === grantId) this.items.delete(id);
  }
}

function build() {
  const next = new Provider(issuer, {
    adapter: SharedAdapter,
    jwks: { keys: [signingKey] },
    cookies: { keys: ['a test cookie key that is long enough'] },
    features: { devInteractions: { enabled: false }, registration: { enabled: true } },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    async findAccount(_ctx, sub) {
      const claims = accounts.get(sub);
      if (!claims) return undefined;
      return { accountId: sub, claims: async () => ({ sub, ...claims }) };
    },
    async loadExistingGrant(ctx) {
      const found = ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (found) return ctx.oidc.provider.Grant.find(found);
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope(ctx.oidc.params.scope ?? 'openid');
      await grant.save();
      return grant;
    },
    ttl: { Session: 60, Interaction: 60, Grant: 60, AccessToken: 60, AuthorizationCode: 60, IdToken: 60 },
  });
  // The tamper control: re-sign the ID token of the token endpoint's answer with changed claims.
  next.use(async (ctx, nextMiddleware) => {
    await nextMiddleware();
    if (ctx.path !== '/token' || !ctx.body || typeof ctx.body !== 'object' || !ctx.body.id_token) return;
    const payload = decodeJwt(ctx.body.id_token);
    const changes = tampering.get(payload.sub);
    if (!changes) return;
    tampering.delete(payload.sub);
    const header = decodeProtectedHeader(ctx.body.id_token);
    const key = await importJWK(signingKey, 'RS256');
    ctx.body = { ...ctx.body, id_token: await new SignJWT({ ...payload, ...changes }).setProtectedHeader(header).sign(key) };
  });
  return next;
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const server = createServer(async (req, res) => {
  try {
    const url = new URL(req.url, issuer);
    if (req.method === 'POST' && url.pathname === '/__control/rotate') {
      signingKey = await newKey();
      provider = build();
      return json(res, 200, { kid: signingKey.kid });
    }
    if (req.method === 'POST' && url.pathname === '/__control/tamper') {
      const { sub, claims } = JSON.parse(await readBody(req));
      tampering.set(sub, claims);
      return json(res, 200, {});
    }
    const login = /^\/interaction\/([^/]+)\/login$/.exec(url.pathname);
    if (req.method === 'POST' && login) {
      const form = new URLSearchParams(await readBody(req));
      const email = form.get('email');
      const sub = form.get('sub') || email;
      const verified = form.get('email_verified');
      accounts.set(sub, {
        email,
        ...(verified === 'missing' ? {} : { email_verified: verified !== 'false' }),
        name: form.get('name') ?? undefined,
        groups: (form.get('groups') ?? '').split(',').filter(Boolean),
      });
      return await provider.interactionFinished(req, res, { login: { accountId: sub } }, { mergeWithLastSubmission: false });
    }
    if (req.method === 'GET' && /^\/interaction\/[^/]+$/.test(url.pathname)) {
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end('<form method="post" action="' + url.pathname + '/login"><input name="email"></form>');
    }
    return provider.callback()(req, res);
  } catch (error) {
    json(res, 500, { error: String(error?.message ?? error) });
  }
});

server.listen(port, '127.0.0.1', async () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  signingKey = await newKey();
  provider = build();
  process.stdout.write(`listening ${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
