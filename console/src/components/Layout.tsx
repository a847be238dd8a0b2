import { useQueryClient } from '@tanstack/react-query';
import { NavLink, useNavigate } from 'react-router';
import { errorMessage } from '../session';
import { useIsAdmin, useMe, useSession } from './session-context';

export function Layout({ children }: { children: React.ReactNode }) {
  const { session } = useSession();
  const me = useMe();
  const navigate = useNavigate();
  const queries = useQueryClient();
  // Users, service accounts and the audit log are admins' (the API refuses others).
  const admin = useIsAdmin();
  const signOut = async () => {
    await session.signOut();
    queries.clear();
    navigate('/sign-in');
  };
  return (
    <div className="shell">
      <header className="top">
        <span className="brand">Platform console</span>
        <nav aria-label="Main">
          <NavLink to="/runs">Runs</NavLink>
          <NavLink to="/executions">Executions</NavLink>
          <NavLink to="/approvals">Approvals</NavLink>
          <NavLink to="/workflows">Workflows</NavLink>
          <NavLink to="/agents">Agents</NavLink>
          <NavLink to="/plugins">Plugins</NavLink>
          <NavLink to="/webhooks">Webhooks</NavLink>
          <NavLink to="/api-keys">API keys</NavLink>
          {admin && <NavLink to="/service-accounts">Service accounts</NavLink>}
          {admin && <NavLink to="/users">Users</NavLink>}
          {admin && <NavLink to="/audit">Audit log</NavLink>}
          <NavLink to="/subscription">License</NavLink>
        </nav>
        <span className="who">{me.data ? `${me.data.user.email} · ${me.data.user.role} · ${me.data.organization.name}` : ''}</span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main>{children}</main>
    </div>
  );
}

/** An error's message, as the API's envelope gave it. */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p role="alert" className="error">
      {errorMessage(error)}
    </p>
  );
}

/** A value as JSON, for inputs and outputs. */
export function Json({ value, label }: { value: unknown; label: string }) {
  return (
    <pre className="json" aria-label={label} tabIndex={0}>
      {value === undefined ? '—' : JSON.stringify(value, null, 2)}
    </pre>
  );
}

export function Status({ status }: { status: string }) {
  return <span className={`status status-${status}`}>{status}</span>;
}
