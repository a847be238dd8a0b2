import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

/** An account as the provider's login form takes it. */
export interface ProviderAccount {
  email: string;
  /** The subject (`sub`); the email when left out. */
  sub?: string;
  name?: string;
  groups?: string[];
  /** true when left out; null: the provider sends no email_verified claim. */
  emailVerified?: boolean | null;
}

/** A real oidc-provider on loopback (test/support/oidc-provider-process.mjs, a process of its own). */
export interface TestOidcProvider {
  issuer: string;
  /** Registers a confidential client (client_secret_basic) with these redirect URIs. */
  register(redirectUris: string[]): Promise<{ clientId: string; clientSecret: string }>;
  /**
   * What a browser does from the authorization URL on: the provider's login form is posted
   * with `account`, consent is granted, and the provider redirects back. Answers the URL it
   * redirects to (ours, with ?code=&state=, or ?error=).
   */
  authorize(authorizationUrl: string, account: ProviderAccount): Promise<URL>;
  /** The provider signs with a new key from now on (a new kid; the old key is gone from its JWKS). */
  rotateKey(): Promise<string>;
  /** The next ID token issued to `sub` has these claims changed (re-signed with the provider's key). */
  tamper(sub: string, claims: Record<string, unknown>): Promise<void>;
  jwksKids(): Promise<string[]>;
  close(): Promise<void>;
}

export async function startOidcProvider(): Promise<TestOidcProvider> {
  const child = spawn(process.execPath, [join(__dirname, 'oidc-provider-process.mjs')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`the test OIDC provider exited (${code}): ${stderr}`)));
  });
  const issuer = `http://127.0.0.1:${port}`;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${issuer}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const answer = (await res.json()) as Record<string, unknown>;
    if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(answer)}`);
    return answer;
  };

  return {
    issuer,
    async register(redirectUris) {
      const client = await post('/reg', {
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      });
      return { clientId: String(client.client_id), clientSecret: String(client.client_secret) };
    },
    async authorize(authorizationUrl, account) {
      const jar = new Map<string, string>();
      let url = new URL(authorizationUrl);
      let init: RequestInit = {};
      for (let hop = 0; hop < 10; hop++) {
        const res = await fetch(url, {
          ...init,
          redirect: 'manual',
          headers: { ...(init.headers as Record<string, string>), cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
        });
        for (const cookie of res.headers.getSetCookie()) {
          const [pair] = cookie.split(';');
          const at = pair.indexOf('=');
          jar.set(pair.slice(0, at), pair.slice(at + 1));
        }
        init = {};
        const location = res.headers.get('location');
        if (location) {
          const next = new URL(location, url);
          if (next.origin !== issuer) return next;
          url = next;
          continue;
        }
        if (res.status === 200 && /^\/interaction\/[^/]+$/.test(url.pathname)) {
          await res.text();
          const form = new URLSearchParams({ email: account.email, name: account.name ?? '', groups: (account.groups ?? []).join(',') });
          if (account.emailVerified === false) form.set('email_verified', 'false');
          if (account.emailVerified === null) form.set('email_verified', 'missing');
          if (account.sub) form.set('sub', account.sub);
          url = new URL(`${url.pathname}/login`, url);
          init = { method: 'POST', body: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } };
          continue;
        }
        throw new Error(`the provider answered ${res.status} at ${url.pathname}: ${await res.text()}`);
      }
      throw new Error('too many redirects at the provider');
    },
    async rotateKey() {
      return String((await post('/__control/rotate', {})).kid);
    },
    async tamper(sub, claims) {
      await post('/__control/tamper', { sub, claims });
    },
    async jwksKids() {
      const jwks = (await (await fetch(`${issuer}/jwks`)).json()) as { keys: Array<{ kid: string }> };
      return jwks.keys.map((k) => k.kid);
    },
    close: () => stop(child),
  };
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
