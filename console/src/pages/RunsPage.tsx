import { useQuery } from '@tanstack/react-query';
import { Link, Navigate, useParams, useSearchParams } from 'react-router';
import { unwrap } from '../../../clients/typescript/src/index';
import { HistoryFilters, useHistoryFilters } from '../components/HistoryFilters';
import { ErrorNote, Status } from '../components/Layout';
import { PagedTable, when } from '../components/PagedTable';
import { useSession } from '../components/session-context';

/**
 * Workflow runs of the organization, newest first: filtered by status, time range, id and
 * workflow, paged by the API's cursor (so a page costs the same at a million runs), all in the
 * URL so a view can be shared. The page refreshes itself every few seconds while it is open.
 */
export function RunsPage() {
  const { session } = useSession();
  const [params] = useSearchParams();
  const filters = useHistoryFilters();
  const workflowId = params.get('workflowId') ?? undefined;
  return (
    <section>
      <h1>Runs</h1>
      <HistoryFilters filters={filters} idLabel="Run id" />
      <PagedTable
        caption="Runs, newest first"
        queryKey={['runs', ...filters.key, workflowId]}
        refetchMs={5000}
        empty="No runs match."
        fetchPage={async (cursor?: string) =>
          unwrap(
            await session.client.GET('/api/runs', {
              params: { query: { limit: 50, ...filters.query(), ...(workflowId ? { workflowId } : {}), ...(cursor ? { cursor } : {}) } },
            }),
          )
        }
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

/** `/runs/:runId`: a run known by its id alone (a child or parent run), opened at its workflow's URL. */
export function RunLookupPage() {
  const { runId = '' } = useParams();
  const { session } = useSession();
  const found = useQuery({
    queryKey: ['run-by-id', runId],
    queryFn: async () => unwrap(await session.client.GET('/api/runs', { params: { query: { id: runId, limit: 1 } } })),
  });
  if (found.error) return <ErrorNote error={found.error} />;
  if (!found.data) return <p role="status">Looking the run up…</p>;
  const run = found.data.data[0];
  if (!run) return <p role="alert">No run {runId} in this organization.</p>;
  return <Navigate to={`/workflows/${run.workflowId}/runs/${run.id}`} replace />;
}
