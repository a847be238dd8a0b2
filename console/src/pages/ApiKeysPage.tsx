import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { unwrap, type Schemas } from '../../../clients/typescript/src/index';
import { IssuedKey } from '../components/IssuedKey';
import { ErrorNote } from '../components/Layout';
import { useSession } from '../components/session-context';

/** The signed-in user's own API keys: create one (its secret shown once, with a copy button), revoke one. */
export function ApiKeysPage() {
  const { session } = useSession();
  const queries = useQueryClient();
  const [issued, setIssued] = useState<Schemas['IssuedApiKeyResponse'] | null>(null);
  const keys = useQuery({
    queryKey: ['my-api-keys'],
    queryFn: async () => unwrap(await session.client.GET('/api/auth/me/api-keys', { params: { query: { limit: 100 } } })),
  });
  const create = useMutation({
    mutationFn: async (name: string) => unwrap(await session.client.POST('/api/auth/me/api-keys', { body: { name } })),
    onSuccess: (key) => {
      setIssued(key);
      void queries.invalidateQueries({ queryKey: ['my-api-keys'] });
    },
  });
  const revoke = useMutation({
    mutationFn: async (keyId: string) =>
      unwrap(await session.client.DELETE('/api/auth/me/api-keys/{keyId}', { params: { path: { keyId } } })),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['my-api-keys'] }),
  });
  return (
    <section>
      <h1>My API keys</h1>
      <form
        className="inline"
        onSubmit={(event) => {
          event.preventDefault();
          const name = String(new FormData(event.currentTarget).get('name')).trim();
          if (name) create.mutate(name);
        }}
      >
        <label>
          Name
          <input name="name" required maxLength={100} />
        </label>
        <button type="submit" disabled={create.isPending}>
          Create key
        </button>
      </form>
      <ErrorNote error={create.error ?? revoke.error ?? keys.error} />
      {issued && <IssuedKey issued={issued} onDone={() => setIssued(null)} />}
      <table>
        <caption className="sr-only">Your keys</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Prefix</th>
            <th scope="col">Scopes</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {keys.data?.data.map((key) => (
            <tr key={key.id}>
              <td>{key.name}</td>
              <td>
                <code>{key.prefix}</code>
              </td>
              <td>{key.scopes?.length ? key.scopes.join(', ') : 'all of your role'}</td>
              <td>{new Date(key.createdAt).toLocaleString()}</td>
              <td>{key.lastUsedAt ? new Date(key.lastUsedAt).toLocaleString() : 'never'}</td>
              <td>
                <button type="button" onClick={() => revoke.mutate(key.id)} disabled={revoke.isPending} aria-label={`Revoke ${key.name}`}>
                  Revoke
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {keys.data?.data.length === 0 && <p>You have no keys.</p>}
    </section>
  );
}
