import { createPlatformClient, PlatformError, type PlatformClient } from '../../clients/typescript/src/index';

/** Where the refresh token is kept: this tab's storage, so a reload stays signed in and closing the tab forgets it. */
const REFRESH_KEY = 'platform.refreshToken';

interface TokenPair {
  accessToken: string;
  refreshToken: string;
}

/**
 * The signed-in session: the access token in memory, the refresh token in the tab's storage.
 * A request answered 401 refreshes once and is sent again; concurrent 401s share one refresh,
 * since the API rotates refresh tokens and takes a reused one as stolen (it ends the family).
 */
export class Session {
  private access: string | null = null;
  private refreshing: Promise<boolean> | null = null;
  private readonly listeners = new Set<() => void>();
  readonly client: PlatformClient;

  constructor(private readonly storage: Storage = window.sessionStorage) {
    this.client = createPlatformClient({
      baseUrl: window.location.origin,
      token: () => this.access ?? undefined,
      fetch: (request) => this.send(request),
    });
  }

  get signedIn(): boolean {
    return this.access !== null || this.storage.getItem(REFRESH_KEY) !== null;
  }

  /** Called when the session starts or ends. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Signs in with a token pair (a password's, or an SSO code's exchange). */
  start(pair: TokenPair): void {
    this.access = pair.accessToken;
    this.storage.setItem(REFRESH_KEY, pair.refreshToken);
    this.changed();
  }

  /** Ends the session on the server (its refresh family), then here. */
  async signOut(): Promise<void> {
    const refreshToken = this.storage.getItem(REFRESH_KEY);
    if (refreshToken) await this.client.POST('/api/auth/logout', { body: { refreshToken } }).catch(() => undefined);
    this.end();
  }

  private end(): void {
    this.access = null;
    this.storage.removeItem(REFRESH_KEY);
    this.changed();
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }

  /** A GET of a live stream (Server-Sent Events) with the session's token: EventSource cannot send one. */
  stream(path: string, signal: AbortSignal, lastEventId?: string): Promise<Response> {
    const headers: Record<string, string> = { Accept: 'text/event-stream' };
    if (lastEventId) headers['Last-Event-ID'] = lastEventId;
    return this.send(new Request(`${window.location.origin}${path}`, { headers, signal }));
  }

  private async send(request: Request): Promise<Response> {
    const retry = request.clone();
    if (!this.access && this.storage.getItem(REFRESH_KEY) && !isAuthRoute(request)) await this.refresh();
    if (this.access && !isAuthRoute(request)) request.headers.set('Authorization', `Bearer ${this.access}`);
    const response = await fetch(request);
    if (response.status !== 401 || isAuthRoute(request)) return response;
    if (!(await this.refresh())) return response;
    retry.headers.set('Authorization', `Bearer ${this.access}`);
    return fetch(retry);
  }

  /** A new token pair for the stored refresh token; false (and signed out) when it is refused. */
  private refresh(): Promise<boolean> {
    this.refreshing ??= (async () => {
      const refreshToken = this.storage.getItem(REFRESH_KEY);
      if (!refreshToken) return false;
      const response = await fetch(`${window.location.origin}/api/auth/refresh`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ refreshToken }),
      }).catch(() => null);
      if (!response?.ok) {
        // Refused (expired, revoked, reused): signed out. A network failure keeps the token for the next try.
        if (response) this.end();
        return false;
      }
      const pair = (await response.json()) as TokenPair;
      this.access = pair.accessToken;
      this.storage.setItem(REFRESH_KEY, pair.refreshToken);
      return true;
    })().finally(() => (this.refreshing = null));
    return this.refreshing;
  }
}

function isAuthRoute(request: Request): boolean {
  const path = new URL(request.url).pathname;
  return path === '/api/auth/login' || path === '/api/auth/refresh' || path === '/api/auth/logout' || path.endsWith('/exchange');
}

/** What to show for a failed call: the envelope's code and message (a PlatformError's), or why the service was not reached. */
export function errorMessage(error: unknown): string {
  if (error instanceof PlatformError && error.status === 403) return `Not allowed here. ${error.message}`;
  return error instanceof Error ? error.message : 'The service did not answer';
}
