import { useQuery } from '@tanstack/react-query';
import { createContext, useContext, useSyncExternalStore } from 'react';
import { unwrap } from '../../../clients/typescript/src/index';
import type { Session } from '../session';

const SessionContext = createContext<Session | null>(null);

export function SessionProvider({ session, children }: { session: Session; children: React.ReactNode }) {
  return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>;
}

/** The session, re-rendering when it starts or ends. */
export function useSession(): { session: Session; signedIn: boolean } {
  const session = useContext(SessionContext)!;
  const signedIn = useSyncExternalStore(
    (listener) => session.subscribe(listener),
    () => session.signedIn,
  );
  return { session, signedIn };
}

/** The signed-in user, organization and tier (GET /api/auth/me). */
export function useMe() {
  const { session, signedIn } = useSession();
  return useQuery({
    queryKey: ['me', signedIn],
    enabled: signedIn,
    staleTime: 60_000,
    queryFn: async () => unwrap(await session.client.GET('/api/auth/me')),
  });
}

/** Whether the signed-in user is an admin (defines workflows, manages users, service accounts, the audit log). */
export function useIsAdmin(): boolean {
  return useMe().data?.user.role === 'admin';
}

/** Whether the signed-in user's role may change runs (answer, retry, cancel): admins and members. */
export function useCanOperate(): boolean {
  const role = useMe().data?.user.role;
  return role === 'admin' || role === 'member';
}

/** The approvals waiting on the signed-in user (one query for every page that shows them). */
export function useApprovals(options: { enabled?: boolean } = {}) {
  const { session } = useSession();
  return useQuery({
    queryKey: ['approvals'],
    refetchInterval: 5000,
    enabled: options.enabled ?? true,
    queryFn: async () => unwrap(await session.client.GET('/api/approvals', { params: { query: { limit: 100 } } })),
  });
}
