import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { unwrap } from '../../../clients/typescript/src/index';
import { ErrorNote, Json } from '../components/Layout';
import { PagedTable, when } from '../components/PagedTable';
import { SchemaForm } from '../components/SchemaForm';
import { useCanOperate, useIsAdmin, useSession } from '../components/session-context';
import { DefinitionSection } from './DefinitionPages';

export function WorkflowsPage() {
  const { session } = useSession();
  const admin = useIsAdmin();
  return (
    <section>
      <h1>Workflows</h1>
      {admin && (
        <p>
          <Link to="/workflows/new">New workflow</Link>
        </p>
      )}
      <PagedTable
        caption="Workflows"
        queryKey={['workflows']}
        empty="No workflows yet."
        fetchPage={async (cursor?: string) =>
          unwrap(await session.client.GET('/api/workflows', { params: { query: { limit: 50, ...(cursor ? { cursor } : {}) } } }))
        }
        columns={[
          { header: 'Name', cell: (w) => <Link to={`/workflows/${w.id}`}>{w.name}</Link> },
          { header: 'Version', cell: (w) => w.version },
          { header: 'Steps', cell: (w) => w.steps.length },
          { header: 'Updated', cell: (w) => when(w.updatedAt) },
        ]}
      />
    </section>
  );
}

/** A workflow: run it with a form made from its inputSchema, its definition, versions, schedules and triggers. */
export function WorkflowPage() {
  const { id = '' } = useParams();
  const { session } = useSession();
  const canOperate = useCanOperate();
  const navigate = useNavigate();
  const workflow = useQuery({
    queryKey: ['workflow', id],
    queryFn: async () => unwrap(await session.client.GET('/api/workflows/{id}', { params: { path: { id } } })),
  });
  const start = useMutation({
    mutationFn: async (input: unknown) =>
      unwrap(
        await session.client.POST('/api/workflows/{id}/run', { params: { path: { id }, query: { wait: 0 } }, body: { input } as never }),
      ),
    onSuccess: (run) => navigate(`/workflows/${id}/runs/${run.id}`),
  });
  if (workflow.error) return <ErrorNote error={workflow.error} />;
  if (!workflow.data) return <p role="status">Loading…</p>;
  const w = workflow.data;
  return (
    <section>
      <h1>{w.name}</h1>
      <p>
        Version {w.version} · updated {when(w.updatedAt)} · <Link to={`/runs?workflowId=${w.id}`}>its runs</Link>
      </p>
      {w.description && <p>{w.description}</p>}
      {canOperate && (
        <div className="card">
          <h2>Run it</h2>
          <SchemaForm
            schema={w.inputSchema ?? { type: 'object', properties: {} }}
            submitLabel="Start run"
            busy={start.isPending}
            onSubmit={(input) => start.mutate(input)}
          />
          <ErrorNote error={start.error} />
        </div>
      )}
      <h2>Schedules</h2>
      <PagedTable
        caption="Schedules"
        queryKey={['schedules', id]}
        cursorParam="schedules"
        empty="No schedules."
        fetchPage={async (cursor?: string) =>
          unwrap(
            await session.client.GET('/api/workflows/{id}/schedules', {
              params: { path: { id }, query: { limit: 50, ...(cursor ? { cursor } : {}) } },
            }),
          )
        }
        columns={[
          { header: 'Cron', cell: (s) => <code>{s.cron}</code> },
          { header: 'Time zone', cell: (s) => s.timezone },
          { header: 'Next', cell: (s) => (s.enabled ? <NextOccurrences workflowId={id} scheduleId={s.id} /> : 'paused') },
          { header: 'Last', cell: (s) => when(s.lastFiredAt) },
        ]}
      />
      <h2>Triggers</h2>
      <PagedTable
        caption="Webhook triggers"
        queryKey={['triggers', id]}
        cursorParam="triggers"
        empty="No triggers."
        fetchPage={async (cursor?: string) =>
          unwrap(
            await session.client.GET('/api/workflows/{id}/triggers', {
              params: { path: { id }, query: { limit: 50, ...(cursor ? { cursor } : {}) } },
            }),
          )
        }
        columns={[
          { header: 'Name', cell: (t) => <Link to={`/workflows/${id}/triggers/${t.id}`}>{t.name ?? t.id}</Link> },
          { header: 'URL', cell: (t) => <code>{t.url}</code> },
          { header: 'Scheme', cell: (t) => t.scheme },
          { header: 'Enabled', cell: (t) => (t.enabled ? 'yes' : 'no') },
        ]}
      />
      <h2>Versions</h2>
      <PagedTable
        caption="Versions, newest first"
        queryKey={['versions', id]}
        cursorParam="versions"
        rowKey={(v) => String(v.version)}
        empty="No versions."
        fetchPage={async (cursor?: string) =>
          unwrap(
            await session.client.GET('/api/workflows/{id}/versions', {
              params: { path: { id }, query: { limit: 20, ...(cursor ? { cursor } : {}) } },
            }),
          )
        }
        columns={[
          { header: 'Version', cell: (v) => v.version },
          { header: 'Steps', cell: (v) => v.steps.map((s) => s.id).join(' → ') },
        ]}
      />
      <CompareVersions workflowId={id} />
      <DefinitionSection workflow={w} />
    </section>
  );
}

/** The organization's tier, seats, rate limit, features and license. */
export function SubscriptionPage() {
  const { session } = useSession();
  const subscription = useQuery({ queryKey: ['subscription'], queryFn: async () => unwrap(await session.client.GET('/api/subscription')) });
  if (subscription.error) return <ErrorNote error={subscription.error} />;
  const s = subscription.data;
  if (!s) return <p role="status">Loading…</p>;
  return (
    <section>
      <h1>License and subscription</h1>
      <dl className="facts">
        <dt>Tier</dt>
        <dd>{s.tier}</dd>
        <dt>Seats</dt>
        <dd>
          {s.seats.used} used of {s.seats.allowed ?? 'unlimited'}
        </dd>
        <dt>Rate limit</dt>
        <dd>
          {s.rateLimit.limit} requests per {s.rateLimit.windowSeconds} s
        </dd>
        <dt>Features</dt>
        <dd>{s.features.join(', ') || 'none'}</dd>
        <dt>License</dt>
        <dd>
          {s.license
            ? `${s.license.status}, ${s.license.customer}, ${s.license.tier}, until ${when(s.license.expiresAt)}`
            : 'none installed'}
        </dd>
      </dl>
      {s.warnings.map((warning) => (
        <p key={warning} className="error">
          {warning}
        </p>
      ))}
    </section>
  );
}

/** A schedule's next fire times (UTC from the API, shown in the reader's time). */
function NextOccurrences({ workflowId, scheduleId }: { workflowId: string; scheduleId: string }) {
  const { session } = useSession();
  const next = useQuery({
    queryKey: ['occurrences', workflowId, scheduleId],
    queryFn: async () =>
      unwrap(
        await session.client.GET('/api/workflows/{id}/schedules/{sid}/occurrences', {
          params: { path: { id: workflowId, sid: scheduleId }, query: { count: 3 } },
        }),
      ),
  });
  if (next.error) return <ErrorNote error={next.error} />;
  return <>{next.data ? next.data.data.map((at) => when(at)).join(', ') : '…'}</>;
}

/** Two versions of the definition side by side (the newest 100 to choose from). */
function CompareVersions({ workflowId }: { workflowId: string }) {
  const { session } = useSession();
  const versions = useQuery({
    queryKey: ['versions-all', workflowId],
    queryFn: async () =>
      unwrap(await session.client.GET('/api/workflows/{id}/versions', { params: { path: { id: workflowId }, query: { limit: 100 } } })),
  });
  const [left, setLeft] = useState<number | null>(null);
  const [right, setRight] = useState<number | null>(null);
  const list = versions.data?.data ?? [];
  if (list.length < 2) return null;
  const shown = (version: number | null) => list.find((v) => v.version === version) ?? null;
  const a = shown(left ?? list[1].version);
  const b = shown(right ?? list[0].version);
  const choose = (label: string, value: number | undefined, set: (v: number) => void) => (
    <label>
      {label}
      <select value={value} onChange={(event) => set(Number(event.target.value))}>
        {list.map((v) => (
          <option key={v.version} value={v.version}>
            {v.version}
          </option>
        ))}
      </select>
    </label>
  );
  const definition = (v: (typeof list)[number] | null) =>
    v && { name: v.name, inputSchema: v.inputSchema, steps: v.steps, output: v.output, timeoutMs: v.timeoutMs };
  return (
    <>
      <h2>Versions side by side</h2>
      <div className="filters">
        {choose('Left', a?.version, setLeft)}
        {choose('Right', b?.version, setRight)}
      </div>
      <div className="side-by-side">
        <Json value={definition(a)} label={`Version ${a?.version}`} />
        <Json value={definition(b)} label={`Version ${b?.version}`} />
      </div>
    </>
  );
}
