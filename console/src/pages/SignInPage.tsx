import { useEffect, useState } from 'react';
import { useNavigate, useSearchParams } from 'react-router';
import { unwrap } from '../../../clients/typescript/src/index';
import { ErrorNote } from '../components/Layout';
import { useSession } from '../components/session-context';

/** Where to go once signed in: the page asked for, if it is one of the console's. */
function nextPage(params: URLSearchParams): string {
  const next = params.get('next') ?? '';
  return next.startsWith('/') && !next.startsWith('//') ? next : '/runs';
}

export function SignInPage() {
  const { session } = useSession();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: React.FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setBusy(true);
    setError(null);
    try {
      const pair = unwrap(
        await session.client.POST('/api/auth/login', {
          body: { email: String(form.get('email')), password: String(form.get('password')) },
        }),
      );
      session.start(pair);
      navigate(nextPage(params), { replace: true });
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="sign-in">
      <h1>Sign in</h1>
      <form onSubmit={submit}>
        <label>
          Email
          <input name="email" type="email" autoComplete="username" required />
        </label>
        <label>
          Password
          <input name="password" type="password" autoComplete="current-password" required />
        </label>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <ErrorNote error={error} />
      </form>
      <SsoLinks />
    </main>
  );
}

/** Single sign-on by organization: the IdP's flow ends at /console/sso with a one-time code. */
function SsoLinks() {
  const [org, setOrg] = useState('');
  const back = `${window.location.origin}/console/sso`;
  const slug = encodeURIComponent(org.trim());
  return (
    <section className="sso" aria-label="Single sign-on">
      <label>
        Organization (for single sign-on)
        <input value={org} onChange={(event) => setOrg(event.target.value)} name="organization" />
      </label>
      <div className="actions">
        <a
          className={`button${slug ? '' : ' disabled'}`}
          aria-disabled={!slug}
          href={slug ? `/api/auth/saml/${slug}/login?redirect=${encodeURIComponent(`${back}?via=saml`)}` : undefined}
        >
          Sign in with SAML
        </a>
        <a
          className={`button${slug ? '' : ' disabled'}`}
          aria-disabled={!slug}
          href={slug ? `/api/auth/oidc/${slug}/login?redirect=${encodeURIComponent(`${back}?via=oidc`)}` : undefined}
        >
          Sign in with OpenID Connect
        </a>
      </div>
    </section>
  );
}

/** Where SAML and OIDC sign-ins land: the one-time code is exchanged for the session's tokens. */
export function SsoLandingPage() {
  const { session } = useSession();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const code = params.get('code');
    const via = params.get('via') === 'oidc' ? 'oidc' : 'saml';
    if (!code) return setError(new Error(params.get('error_description') ?? params.get('error') ?? 'The sign-in answer has no code'));
    let cancelled = false;
    void (async () => {
      try {
        const route = via === 'oidc' ? '/api/auth/oidc/exchange' : '/api/auth/saml/exchange';
        const pair = unwrap(await session.client.POST(route, { body: { code } }));
        if (cancelled) return;
        session.start(pair);
        navigate('/runs', { replace: true });
      } catch (failure) {
        if (!cancelled) setError(failure);
      }
    })();
    return () => {
      cancelled = true;
    };
  }, [params, session, navigate]);
  return (
    <main className="sign-in">
      <h1>Signing in…</h1>
      <ErrorNote error={error} />
    </main>
  );
}
