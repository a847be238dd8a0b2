import { Link, useSearchParams } from 'react-router';
import { unwrap } from '../../../clients/typescript/src/index';
import { Status } from '../components/Layout';
import { PagedTable, RunStatus, StatusSelect, when } from '../components/PagedTable';
import { useSession } from '../components/session-context';

const RANGES: Record<string, number | null> = {
  'last hour': 3600_000,
  'last 24 hours': 86_400_000,
  'last 7 days': 7 * 86_400_000,
  'any time': null,
};

/**
 * Workflow runs of the organization, newest first: filtered by status, time range and workflow,
 * paged by the API's cursor (so a page costs the same at a million runs), all in the URL so a
 * view can be shared. The page refreshes itself every few seconds while it is open.
 */
export function RunsPage() {
  const { session } = useSession();
  const [params, setParams] = useSearchParams();
  const status = (params.get('status') ?? '') as RunStatus | '';
  const range = params.get('range') ?? 'any time';
  const workflowId = params.get('workflowId') ?? undefined;
  /** A filter changed: back to the first page. */
  const set = (key: string, value: string | null) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value);
    else next.delete(key);
    next.delete('cursor');
    setParams(next);
  };
  return (
    <section>
      <h1>Runs</h1>
      <form className="filters" onSubmit={(event) => event.preventDefault()}>
        <StatusSelect value={status} onChange={(next) => set('status', next || null)} />
        <label>
          Started
          <select value={range} onChange={(event) => set('range', event.target.value === 'any time' ? null : event.target.value)}>
            {Object.keys(RANGES).map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        </label>
      </form>
      <PagedTable
        caption="Runs, newest first"
        queryKey={['runs', status, range, workflowId]}
        refetchMs={5000}
        empty="No runs match."
        fetchPage={async (cursor?: string) => {
          const since = RANGES[range] ? new Date(Date.now() - RANGES[range]!).toISOString() : undefined;
          return unwrap(
            await session.client.GET('/api/runs', {
              params: {
                query: {
                  limit: 50,
                  ...(status ? { status } : {}),
                  ...(since ? { since } : {}),
                  ...(workflowId ? { workflowId } : {}),
                  ...(cursor ? { cursor } : {}),
                },
              },
            }),
          );
        }}
        columns={[
          { header: 'Run', cell: (run) => <Link to={`/workflows/${run.workflowId}/runs/${run.id}`}>{run.id}</Link> },
          { header: 'Status', cell: (run) => <Status status={run.status} /> },
          { header: 'Workflow version', cell: (run) => run.workflowVersion },
          { header: 'Created', cell: (run) => when(run.createdAt) },
          { header: 'Duration', cell: (run) => (run.durationMs === null ? '—' : `${run.durationMs} ms`) },
        ]}
      />
    </section>
  );
}
