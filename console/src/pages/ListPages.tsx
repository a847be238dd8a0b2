import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { unwrap } from '../../../clients/typescript/src/index';
import { ErrorNote, Status } from '../components/Layout';
import { PagedTable, when } from '../components/PagedTable';
import { useIsAdmin, useSession } from '../components/session-context';
import { HistoryFilters, useHistoryFilters } from '../components/HistoryFilters';

/** Agent executions of the organization, newest first, by status, time range and id. */
export function ExecutionsPage() {
  const { session } = useSession();
  const filters = useHistoryFilters();
  return (
    <section>
      <h1>Executions</h1>
      <HistoryFilters filters={filters} idLabel="Execution id" />
      <PagedTable
        caption="Agent executions, newest first"
        queryKey={['executions', ...filters.key]}
        refetchMs={5000}
        empty="No executions match."
        fetchPage={async (cursor?: string) =>
          unwrap(
            await session.client.GET('/api/executions', {
              params: { query: { limit: 50, ...filters.query(), ...(cursor ? { cursor } : {}) } },
            }),
          )
        }
        columns={[
          { header: 'Execution', cell: (e) => <code>{e.id}</code> },
          { header: 'Status', cell: (e) => <Status status={e.status} /> },
          { header: 'Agent', cell: (e) => <code>{e.agentId}</code> },
          { header: 'Attempts', cell: (e) => e.attempts },
          { header: 'Created', cell: (e) => when(e.createdAt) },
          { header: 'Error', cell: (e) => (e.error ? `${String(e.error.code ?? '')} ${String(e.error.message ?? '')}` : '') },
        ]}
      />
    </section>
  );
}

export function AgentsPage() {
  const { session } = useSession();
  return (
    <section>
      <h1>Agents</h1>
      <PagedTable
        caption="Agents"
        queryKey={['agents']}
        empty="No agents yet."
        fetchPage={async (cursor?: string) =>
          unwrap(await session.client.GET('/api/agents', { params: { query: { limit: 50, ...(cursor ? { cursor } : {}) } } }))
        }
        columns={[
          { header: 'Name', cell: (a) => a.name },
          { header: 'Kind', cell: (a) => <code>{a.kind}</code> },
          { header: 'Attempts', cell: (a) => a.maxAttempts },
          { header: 'Updated', cell: (a) => when(a.updatedAt) },
        ]}
      />
    </section>
  );
}

export function WebhooksPage() {
  const { session } = useSession();
  return (
    <section>
      <h1>Webhooks</h1>
      <PagedTable
        caption="Webhook endpoints"
        queryKey={['webhooks']}
        empty="No endpoints."
        fetchPage={async (cursor?: string) =>
          unwrap(await session.client.GET('/api/webhooks', { params: { query: { limit: 50, ...(cursor ? { cursor } : {}) } } }))
        }
        columns={[
          { header: 'URL', cell: (w) => <Link to={`/webhooks/${w.id}`}>{w.url}</Link> },
          { header: 'Events', cell: (w) => w.eventTypes.join(', ') || 'all' },
          { header: 'Enabled', cell: (w) => (w.enabled ? 'yes' : `no${w.disabledReason ? ` (${w.disabledReason})` : ''}`) },
          { header: 'Created', cell: (w) => when(w.createdAt) },
        ]}
      />
    </section>
  );
}

/** An endpoint's delivery log; an admin can send a finished message again. */
export function WebhookPage() {
  const { id = '' } = useParams();
  const { session } = useSession();
  const admin = useIsAdmin();
  const queries = useQueryClient();
  const redeliver = useMutation({
    mutationFn: async (messageId: string) =>
      unwrap(await session.client.POST('/api/webhooks/{id}/deliveries/{messageId}/redeliver', { params: { path: { id, messageId } } })),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['deliveries', id] }),
  });
  const recover = useMutation({
    mutationFn: async (since: string) =>
      unwrap(await session.client.POST('/api/webhooks/{id}/recover', { params: { path: { id } }, body: { since } })),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['deliveries', id] }),
  });
  return (
    <section>
      <h1>Deliveries</h1>
      {admin && (
        <form
          className="inline"
          onSubmit={(event) => {
            event.preventDefault();
            const since = String(new FormData(event.currentTarget).get('since'));
            if (since) recover.mutate(new Date(since).toISOString());
          }}
        >
          <label>
            Send failed and skipped messages again, since
            <input name="since" type="datetime-local" required />
          </label>
          <button type="submit" disabled={recover.isPending}>
            Recover
          </button>
        </form>
      )}
      {recover.isSuccess && <p role="status">Failed and skipped messages since {when(recover.data.since)} are being sent again.</p>}
      <ErrorNote error={redeliver.error ?? recover.error} />
      <PagedTable
        caption="Messages sent to the endpoint, newest first"
        queryKey={['deliveries', id]}
        refetchMs={5000}
        empty="Nothing sent yet."
        fetchPage={async (cursor?: string) =>
          unwrap(
            await session.client.GET('/api/webhooks/{id}/deliveries', {
              params: { path: { id }, query: { limit: 50, ...(cursor ? { cursor } : {}) } },
            }),
          )
        }
        columns={[
          { header: 'Message', cell: (d) => <code>{d.id}</code> },
          { header: 'Event', cell: (d) => d.type },
          { header: 'Status', cell: (d) => <Status status={d.status} /> },
          { header: 'Attempts', cell: (d) => d.attempts },
          { header: 'Created', cell: (d) => when(d.createdAt) },
          { header: 'Error', cell: (d) => (d.error ? String((d.error as { message?: string }).message ?? '') : '') },
          {
            header: 'Actions',
            cell: (d) =>
              admin && d.status !== 'pending' ? (
                <button type="button" onClick={() => redeliver.mutate(d.id)} disabled={redeliver.isPending}>
                  Redeliver
                </button>
              ) : null,
          },
        ]}
      />
    </section>
  );
}

export function UsersPage() {
  const { session } = useSession();
  return (
    <section>
      <h1>Users</h1>
      <PagedTable
        caption="Users of the organization"
        queryKey={['users']}
        empty="No users."
        fetchPage={async (cursor?: string) =>
          unwrap(await session.client.GET('/api/users', { params: { query: { limit: 50, ...(cursor ? { cursor } : {}) } } }))
        }
        columns={[
          { header: 'Email', cell: (u) => u.email },
          { header: 'Name', cell: (u) => [u.firstName, u.lastName].filter(Boolean).join(' ') },
          { header: 'Role', cell: (u) => u.role },
          { header: 'Disabled', cell: (u) => (u.disabled ? 'yes' : 'no') },
          { header: 'Created', cell: (u) => when(u.createdAt) },
        ]}
      />
    </section>
  );
}

export function AuditPage() {
  const { session } = useSession();
  return (
    <section>
      <h1>Audit log</h1>
      <PagedTable
        caption="Audit events, newest first"
        queryKey={['audit']}
        empty="No events."
        fetchPage={async (cursor?: string) =>
          unwrap(await session.client.GET('/api/audit-events', { params: { query: { limit: 50, ...(cursor ? { cursor } : {}) } } }))
        }
        columns={[
          { header: 'When', cell: (e) => when(e.occurredAt) },
          { header: 'Actor', cell: (e) => `${e.actor.name ?? e.actor.type}${e.actor.via ? ` (${e.actor.via})` : ''}` },
          { header: 'Action', cell: (e) => <code>{e.action}</code> },
          { header: 'Target', cell: (e) => (e.target ? `${e.target.type} ${e.target.name ?? e.target.id ?? ''}` : '') },
          { header: 'Outcome', cell: (e) => e.outcome },
        ]}
      />
    </section>
  );
}

export function PluginsPage() {
  const { session } = useSession();
  return (
    <section>
      <h1>Plugins</h1>
      <PagedTable
        caption="Installed plugins"
        queryKey={['plugins']}
        rowKey={(p) => p.slug}
        empty="No plugins installed."
        fetchPage={async (cursor?: string) =>
          unwrap(await session.client.GET('/api/plugins', { params: { query: { limit: 50, ...(cursor ? { cursor } : {}) } } }))
        }
        columns={[
          { header: 'Plugin', cell: (p) => `${p.name} (${p.slug})` },
          { header: 'Version', cell: (p) => p.version },
          { header: 'Agent kinds', cell: (p) => p.agentKinds.map((k) => k.kind ?? '').join(', ') },
          { header: 'Installed', cell: (p) => when(p.installedAt) },
        ]}
      />
      <h2>MCP servers</h2>
      <PagedTable
        caption="MCP servers"
        queryKey={['mcp-servers']}
        cursorParam="servers"
        empty="No MCP servers."
        fetchPage={async (cursor?: string) =>
          unwrap(await session.client.GET('/api/mcp-servers', { params: { query: { limit: 50, ...(cursor ? { cursor } : {}) } } }))
        }
        columns={[
          { header: 'Name', cell: (m) => m.name },
          { header: 'URL', cell: (m) => m.url },
          { header: 'Tools', cell: (m) => m.tools.length },
          { header: 'Refreshed', cell: (m) => when(m.refreshedAt) },
        ]}
      />
    </section>
  );
}
