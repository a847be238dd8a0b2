import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { unwrap } from '../../../clients/typescript/src/index';
import { ErrorNote, Status } from '../components/Layout';
import { useSession } from '../components/session-context';

const STATUSES = ['queued', 'running', 'waiting', 'succeeded', 'failed', 'canceled', 'timed_out'] as const;
type RunStatus = (typeof STATUSES)[number];
const RANGES: Record<string, number | null> = {
  'last hour': 3600_000,
  'last 24 hours': 86_400_000,
  'last 7 days': 7 * 86_400_000,
  'any time': null,
};

/**
 * Workflow runs of the organization, newest first: filtered by status and time range, paged by
 * the API's cursor (so a page costs the same at a million runs), all in the URL so a view can be
 * shared. The page refreshes itself every few seconds while it is open.
 */
export function RunsPage() {
  const { session } = useSession();
  const [params, setParams] = useSearchParams();
  const status = (params.get('status') ?? '') as RunStatus | '';
  const range = params.get('range') ?? 'any time';
  const cursor = params.get('cursor') ?? undefined;
  const workflowId = params.get('workflowId') ?? undefined;
  const since = RANGES[range] ? new Date(Date.now() - RANGES[range]!).toISOString() : undefined;
  const runs = useQuery({
    queryKey: ['runs', status, range, workflowId, cursor],
    placeholderData: keepPreviousData,
    refetchInterval: 5000,
    queryFn: async () =>
      unwrap(
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
      ),
  });
  const set = (changes: Record<string, string | null>) => {
    const next = new URLSearchParams(params);
    for (const [key, value] of Object.entries(changes)) {
      if (value) next.set(key, value);
      else next.delete(key);
    }
    setParams(next);
  };
  return (
    <section>
      <h1>Runs</h1>
      <form className="filters" onSubmit={(event) => event.preventDefault()}>
        <label>
          Status
          <select value={status} onChange={(event) => set({ status: event.target.value || null, cursor: null })}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Started
          <select
            value={range}
            onChange={(event) => set({ range: event.target.value === 'any time' ? null : event.target.value, cursor: null })}
          >
            {Object.keys(RANGES).map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        </label>
      </form>
      <ErrorNote error={runs.error} />
      <table>
        <caption className="sr-only">Runs, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Run</th>
            <th scope="col">Status</th>
            <th scope="col">Workflow version</th>
            <th scope="col">Created</th>
            <th scope="col">Duration</th>
          </tr>
        </thead>
        <tbody>
          {runs.data?.data.map((run) => (
            <tr key={run.id}>
              <td>
                <Link to={`/workflows/${run.workflowId}/runs/${run.id}`}>{run.id}</Link>
              </td>
              <td>
                <Status status={run.status} />
              </td>
              <td>{run.workflowVersion}</td>
              <td>{new Date(run.createdAt).toLocaleString()}</td>
              <td>{run.durationMs === null ? '—' : `${run.durationMs} ms`}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {runs.data && runs.data.data.length === 0 && <p>No runs match.</p>}
      <div className="actions">
        {cursor && (
          <button type="button" onClick={() => set({ cursor: null })}>
            First page
          </button>
        )}
        {runs.data?.nextCursor && (
          <button type="button" onClick={() => set({ cursor: runs.data!.nextCursor })}>
            Next page
          </button>
        )}
      </div>
    </section>
  );
}
