import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { unwrap, type Schemas } from '../../../clients/typescript/src/index';
import { SCOPES, type Scope } from '../../../src/shared/auth/scopes';
import { IssuedKey } from '../components/IssuedKey';
import { ErrorNote } from '../components/Layout';
import { PagedTable, when } from '../components/PagedTable';
import { useIsAdmin, useSession } from '../components/session-context';

type Role = Schemas['ServiceAccountResponse']['role'];

const ROLES: Role[] = ['admin', 'member', 'viewer'];
/** How long a rotated key's previous secret keeps working. */
const GRACES: Array<[seconds: number, label: string]> = [
  [0, 'not at all'],
  [3600, 'an hour'],
  [86_400, 'a day'],
  [604_800, 'a week'],
];

/** The organization's service accounts; an admin creates one (the API answers them to admins only). */
export function ServiceAccountsPage() {
  const { session } = useSession();
  const admin = useIsAdmin();
  const navigate = useNavigate();
  const queries = useQueryClient();
  const create = useMutation({
    mutationFn: async (body: Schemas['CreateServiceAccountRequest']) =>
      unwrap(await session.client.POST('/api/service-accounts', { body })),
    onSuccess: (account) => {
      void queries.invalidateQueries({ queryKey: ['service-accounts'] });
      navigate(`/service-accounts/${account.id}`);
    },
  });
  return (
    <section>
      <h1>Service accounts</h1>
      <p>Principals of the organization that hold API keys for scripts and integrations, and take no seat.</p>
      {admin && (
        <form
          className="inline"
          onSubmit={(event) => {
            event.preventDefault();
            const form = new FormData(event.currentTarget);
            const name = String(form.get('name')).trim();
            if (name) create.mutate({ name, role: String(form.get('role')) as Role });
          }}
        >
          <label>
            Name
            <input name="name" required maxLength={100} />
          </label>
          <label>
            Role
            <select name="role" defaultValue="viewer">
              {ROLES.map((role) => (
                <option key={role}>{role}</option>
              ))}
            </select>
          </label>
          <button type="submit" disabled={create.isPending}>
            Create service account
          </button>
        </form>
      )}
      <ErrorNote error={create.error} />
      <PagedTable
        caption="Service accounts, newest first"
        queryKey={['service-accounts']}
        empty="No service accounts."
        fetchPage={async (cursor?: string) =>
          unwrap(await session.client.GET('/api/service-accounts', { params: { query: { limit: 50, ...(cursor ? { cursor } : {}) } } }))
        }
        columns={[
          { header: 'Name', cell: (a) => <Link to={`/service-accounts/${a.id}`}>{a.name}</Link> },
          { header: 'Role', cell: (a) => a.role },
          { header: 'Disabled', cell: (a) => (a.disabled ? 'yes' : 'no') },
          { header: 'Created', cell: (a) => when(a.createdAt) },
        ]}
      />
    </section>
  );
}

/** A service account: its role, disabling or deleting it, and its keys (create, rotate, revoke). */
export function ServiceAccountPage() {
  const { id = '' } = useParams();
  const { session } = useSession();
  const admin = useIsAdmin();
  const navigate = useNavigate();
  const queries = useQueryClient();
  const [issued, setIssued] = useState<Schemas['IssuedApiKeyResponse'] | null>(null);
  const [grace, setGrace] = useState(0);
  const [deleting, setDeleting] = useState(false);
  const account = useQuery({
    queryKey: ['service-account', id],
    queryFn: async () => unwrap(await session.client.GET('/api/service-accounts/{id}', { params: { path: { id } } })),
  });
  const changed = () => {
    void queries.invalidateQueries({ queryKey: ['service-account', id] });
    void queries.invalidateQueries({ queryKey: ['service-accounts'] });
  };
  const update = useMutation({
    mutationFn: async (body: Schemas['UpdateServiceAccountRequest']) =>
      unwrap(await session.client.PATCH('/api/service-accounts/{id}', { params: { path: { id } }, body })),
    onSuccess: changed,
  });
  const remove = useMutation({
    mutationFn: async () => unwrap(await session.client.DELETE('/api/service-accounts/{id}', { params: { path: { id } } })),
    onSuccess: () => {
      void queries.invalidateQueries({ queryKey: ['service-accounts'] });
      navigate('/service-accounts');
    },
  });
  const keysChanged = (key: Schemas['IssuedApiKeyResponse']) => {
    setIssued(key);
    void queries.invalidateQueries({ queryKey: ['service-account-keys', id] });
  };
  const createKey = useMutation({
    mutationFn: async (body: Schemas['CreateApiKeyRequest']) =>
      unwrap(await session.client.POST('/api/service-accounts/{id}/api-keys', { params: { path: { id } }, body })),
    onSuccess: keysChanged,
  });
  const rotateKey = useMutation({
    mutationFn: async (keyId: string) =>
      unwrap(
        await session.client.POST('/api/service-accounts/{id}/api-keys/{keyId}/rotate', {
          params: { path: { id, keyId } },
          body: { graceSeconds: grace },
        }),
      ),
    onSuccess: keysChanged,
  });
  const revokeKey = useMutation({
    mutationFn: async (keyId: string) =>
      unwrap(await session.client.DELETE('/api/service-accounts/{id}/api-keys/{keyId}', { params: { path: { id, keyId } } })),
    onSuccess: (_, keyId) => {
      // A revoked key's secret, if still shown, no longer works: not worth copying.
      if (issued?.id === keyId) setIssued(null);
      void queries.invalidateQueries({ queryKey: ['service-account-keys', id] });
    },
  });
  if (account.error) return <ErrorNote error={account.error} />;
  if (!account.data) return <p role="status">Loading…</p>;
  const a = account.data;
  return (
    <section>
      <h1>Service account {a.name}</h1>
      <p>
        <Link to="/service-accounts">All service accounts</Link>
      </p>
      <dl className="facts">
        <dt>Role</dt>
        <dd>{a.role}</dd>
        <dt>Status</dt>
        <dd>{a.disabled ? 'disabled: every one of its keys is refused' : 'enabled'}</dd>
        <dt>Created</dt>
        <dd>{when(a.createdAt)}</dd>
        <dt>Updated</dt>
        <dd>{when(a.updatedAt)}</dd>
      </dl>
      {admin && (
        <div className="card">
          <h2>Account</h2>
          <form
            className="inline"
            onSubmit={(event) => {
              event.preventDefault();
              const form = new FormData(event.currentTarget);
              const name = String(form.get('name')).trim();
              update.mutate({ ...(name && name !== a.name ? { name } : {}), role: String(form.get('role')) as Role });
            }}
          >
            <label>
              Name
              <input name="name" defaultValue={a.name} required maxLength={100} />
            </label>
            <label>
              Role
              <select name="role" defaultValue={a.role}>
                {ROLES.map((role) => (
                  <option key={role}>{role}</option>
                ))}
              </select>
            </label>
            <button type="submit" disabled={update.isPending}>
              Save
            </button>
          </form>
          <div className="actions">
            <button type="button" onClick={() => update.mutate({ disabled: !a.disabled })} disabled={update.isPending}>
              {a.disabled ? 'Enable' : 'Disable'}
            </button>
            {deleting ? (
              <>
                <span>Delete {a.name} and every one of its keys?</span>
                <button type="button" onClick={() => remove.mutate()} disabled={remove.isPending}>
                  Delete for good
                </button>
                <button type="button" onClick={() => setDeleting(false)}>
                  Keep it
                </button>
              </>
            ) : (
              <button type="button" onClick={() => setDeleting(true)}>
                Delete
              </button>
            )}
          </div>
          <ErrorNote error={update.error ?? remove.error} />
        </div>
      )}
      <h2>API keys</h2>
      {admin && <NewKeyForm busy={createKey.isPending} onSubmit={(body) => createKey.mutate(body)} />}
      <ErrorNote error={createKey.error ?? rotateKey.error ?? revokeKey.error} />
      {issued && <IssuedKey issued={issued} onDone={() => setIssued(null)} />}
      {admin && (
        <form className="filters" onSubmit={(event) => event.preventDefault()}>
          <label>
            On rotation, the previous secret keeps working for
            <select value={grace} onChange={(event) => setGrace(Number(event.target.value))}>
              {GRACES.map(([seconds, label]) => (
                <option key={seconds} value={seconds}>
                  {label}
                </option>
              ))}
            </select>
          </label>
        </form>
      )}
      <PagedTable
        caption="The service account's keys, newest first"
        queryKey={['service-account-keys', id]}
        cursorParam="keys"
        empty="It has no keys."
        fetchPage={async (cursor?: string) =>
          unwrap(
            await session.client.GET('/api/service-accounts/{id}/api-keys', {
              params: { path: { id }, query: { limit: 50, ...(cursor ? { cursor } : {}) } },
            }),
          )
        }
        columns={[
          { header: 'Name', cell: (k) => k.name },
          { header: 'Prefix', cell: (k) => <code>{k.prefix}</code> },
          { header: 'Scopes', cell: (k) => (k.scopes?.length ? k.scopes.join(', ') : 'all of its role') },
          { header: 'Created', cell: (k) => when(k.createdAt) },
          { header: 'Expires', cell: (k) => (k.expiresAt ? when(k.expiresAt) : 'never') },
          { header: 'Last used', cell: (k) => (k.lastUsedAt ? when(k.lastUsedAt) : 'never') },
          {
            header: 'Actions',
            cell: (k) =>
              admin ? (
                <div className="actions">
                  <button
                    type="button"
                    onClick={() => rotateKey.mutate(k.id)}
                    disabled={rotateKey.isPending}
                    aria-label={`Rotate ${k.name}`}
                  >
                    Rotate
                  </button>
                  <button
                    type="button"
                    onClick={() => revokeKey.mutate(k.id)}
                    disabled={revokeKey.isPending}
                    aria-label={`Revoke ${k.name}`}
                  >
                    Revoke
                  </button>
                </div>
              ) : null,
          },
        ]}
      />
    </section>
  );
}

/** A new key: its name, what it is narrowed to (none ticked: all its account's role allows), when it expires. */
function NewKeyForm({ busy, onSubmit }: { busy: boolean; onSubmit: (body: Schemas['CreateApiKeyRequest']) => void }) {
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        const form = new FormData(event.currentTarget);
        const name = String(form.get('name')).trim();
        const scopes = form.getAll('scopes').map(String) as Scope[];
        const expires = String(form.get('expiresAt') ?? '');
        if (!name) return;
        onSubmit({
          name,
          ...(scopes.length ? { scopes } : {}),
          ...(expires ? { expiresAt: new Date(expires).toISOString() } : {}),
        });
      }}
    >
      <div className="inline">
        <label>
          Key name
          <input name="name" required maxLength={100} />
        </label>
        <label>
          Expires (left empty: the organization's default)
          <input name="expiresAt" type="datetime-local" />
        </label>
        <button type="submit" disabled={busy}>
          Create key
        </button>
      </div>
      <details>
        <summary>Narrow the key to scopes</summary>
        <fieldset className="filters">
          <legend>Scopes (none ticked: everything the account's role allows)</legend>
          {SCOPES.map((scope) => (
            <label key={scope}>
              <input type="checkbox" name="scopes" value={scope} /> {scope}
            </label>
          ))}
        </fieldset>
      </details>
    </form>
  );
}
