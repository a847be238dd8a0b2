import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { unwrap, type Schemas } from '../../../clients/typescript/src/index';
import { ApprovalForm } from '../components/ApprovalForm';
import { ErrorNote, Json, Status } from '../components/Layout';
import { useLiveStream } from '../components/live-stream';
import { PagedTable, when } from '../components/PagedTable';
import { RunGraphView } from '../components/RunGraphView';
import { useApprovals, useCanOperate, useSession } from '../components/session-context';

type Run = Schemas['RunWithStepsResponse'];
type StepRun = Schemas['StepRunResponse'];
const LIVE = new Set(['queued', 'running', 'waiting']);

/** A run: its graph, the selected step's input, output, error, attempts and times, and what can be done with it. */
export function RunPage() {
  const { workflowId = '', runId = '' } = useParams();
  const { session } = useSession();
  const canOperate = useCanOperate();
  const queries = useQueryClient();
  const [selected, setSelected] = useState<string | null>(null);
  const [fromStep, setFromStep] = useState('');

  const key = ['run', workflowId, runId];
  // Live: once read and while not final, every transition on the run's event stream reads the
  // run again; it is polled only while the stream is not open.
  const last = queries.getQueryData<Run>(key);
  const streaming = useLiveStream(last && LIVE.has(last.status) ? `/api/workflows/${workflowId}/runs/${runId}/events` : null, () => {
    void queries.invalidateQueries({ queryKey: key });
  });
  const run = useQuery({
    queryKey: key,
    refetchInterval: (query) => (streaming || (query.state.data && !LIVE.has(query.state.data.status)) ? false : 2000),
    queryFn: async () =>
      unwrap(await session.client.GET('/api/workflows/{id}/runs/{runId}', { params: { path: { id: workflowId, runId } } })),
  });
  const version = run.data?.workflowVersion;
  const definition = useQuery({
    queryKey: ['workflow-version', workflowId, version],
    enabled: version !== undefined,
    staleTime: Infinity,
    queryFn: async () => definitionOf(session, workflowId, version!),
  });
  const approvals = useApprovals({ enabled: !!run.data?.steps.some((step) => step.waitingFor?.for === 'approval') });
  const act = useMutation({
    mutationFn: async (action: { kind: 'cancel' } | { kind: 'retry'; fromStep?: string }) => {
      const path = { id: workflowId, runId };
      if (action.kind === 'cancel')
        return unwrap(await session.client.POST('/api/workflows/{id}/runs/{runId}/cancel', { params: { path } }));
      return unwrap(
        await session.client.POST('/api/workflows/{id}/runs/{runId}/retry', {
          params: { path },
          body: action.fromStep ? { fromStep: action.fromStep } : {},
        }),
      );
    },
    onSuccess: () => queries.invalidateQueries({ queryKey: key }),
  });

  if (run.error) return <ErrorNote error={run.error} />;
  if (!run.data) return <p role="status">Loading…</p>;
  const current: Run = run.data;
  const failed = current.steps.find((step) => step.status === 'failed');
  // Shown first: the step that failed, or the one the run waits on.
  const focus = failed ?? current.steps.find((s) => s.status === 'waiting');
  const step = current.steps.find((s) => s.id === (selected ?? focus?.id)) ?? null;
  const stepIds = definition.data?.steps.map((s) => s.id) ?? current.steps.map((s) => s.id);
  return (
    <section>
      <h1>
        Run <code>{current.id}</code> <Status status={current.status} />
      </h1>
      <p>
        Version {current.workflowVersion} · created {new Date(current.createdAt).toLocaleString()}
        {current.durationMs !== null ? ` · ${current.durationMs} ms` : ''}
        {current.parentRunId ? (
          <>
            {' '}
            · child of <Link to={`/runs/${current.parentRunId}`}>{current.parentRunId}</Link>
          </>
        ) : null}
        {current.retriedBy ? (
          <>
            {' '}
            · retried as <Link to={`/workflows/${workflowId}/runs/${current.retriedBy}`}>{current.retriedBy}</Link>
          </>
        ) : null}
        {current.retryOf ? (
          <>
            {' '}
            · a retry of <Link to={`/workflows/${workflowId}/runs/${current.retryOf}`}>{current.retryOf}</Link>
          </>
        ) : null}
      </p>
      {current.error && (
        <p className="error" role="alert">
          {current.error.code ? `${String(current.error.code)}: ` : ''}
          {String(current.error.message ?? '')}
        </p>
      )}
      {canOperate && (
        <div className="actions" aria-label="Run actions">
          {LIVE.has(current.status) && (
            <button type="button" onClick={() => act.mutate({ kind: 'cancel' })} disabled={act.isPending}>
              Cancel run
            </button>
          )}
          {!LIVE.has(current.status) && !current.retriedBy && (
            <>
              {failed && (
                <button type="button" onClick={() => act.mutate({ kind: 'retry', fromStep: failed.id })} disabled={act.isPending}>
                  Retry from {failed.id}
                </button>
              )}
              <label>
                Retry from step
                <select value={fromStep} onChange={(event) => setFromStep(event.target.value)}>
                  <option value="">the first failed one</option>
                  {stepIds.map((id) => (
                    <option key={id}>{id}</option>
                  ))}
                </select>
              </label>
              <button
                type="button"
                onClick={() => act.mutate({ kind: 'retry', ...(fromStep ? { fromStep } : {}) })}
                disabled={act.isPending}
              >
                Retry
              </button>
            </>
          )}
        </div>
      )}
      <ErrorNote error={act.error} />
      {act.data && 'id' in act.data && act.data.id !== current.id && (
        <p role="status">
          Retried as <Link to={`/workflows/${workflowId}/runs/${act.data.id}`}>{act.data.id}</Link>
        </p>
      )}
      <div className="run-body">
        <div className="graph-box">
          {definition.error ? <ErrorNote error={definition.error} /> : null}
          <RunGraphView
            definition={definition.data?.steps ?? []}
            steps={current.steps}
            selected={step?.id ?? null}
            onSelect={setSelected}
          />
        </div>
        {step && (
          <StepDetails
            workflowId={workflowId}
            runId={runId}
            step={step}
            approval={approvals.data?.data.find((a) => a.runId === current.id && a.stepId === step.id)}
            canOperate={canOperate}
          />
        )}
      </div>
      <h2>Input</h2>
      <Json value={current.input} label="Run input" />
      <h2>Output</h2>
      <Json value={current.output} label="Run output" />
    </section>
  );
}

function StepDetails({
  workflowId,
  runId,
  step,
  approval,
  canOperate,
}: {
  workflowId: string;
  runId: string;
  step: StepRun;
  approval?: Schemas['ApprovalResponse'];
  canOperate: boolean;
}) {
  return (
    <aside className="step" aria-label={`Step ${step.id}`}>
      <h2>
        Step <code>{step.id}</code> <Status status={step.status} />
      </h2>
      <dl>
        <dt>Attempts</dt>
        <dd>{step.attempts}</dd>
        <dt>Started</dt>
        <dd>{step.startedAt ? new Date(step.startedAt).toLocaleString() : '—'}</dd>
        <dt>Finished</dt>
        <dd>{step.finishedAt ? new Date(step.finishedAt).toLocaleString() : '—'}</dd>
        {step.reason ? (
          <>
            <dt>Reason</dt>
            <dd>{step.reason}</dd>
          </>
        ) : null}
        {step.childRunId ? (
          <>
            <dt>Child run</dt>
            <dd>
              <Link to={`/runs/${step.childRunId}`}>{step.childRunId}</Link>
            </dd>
          </>
        ) : null}
        {step.waitingFor ? (
          <>
            <dt>Waiting for</dt>
            <dd>
              {step.waitingFor.for}
              {step.waitingFor.event ? ` ${step.waitingFor.event}` : ''}
              {step.waitingFor.timeoutAt ? `, until ${new Date(step.waitingFor.timeoutAt).toLocaleString()}` : ''}
            </dd>
          </>
        ) : null}
      </dl>
      {step.error && (
        <p className="error" role="alert" aria-label="Step error">
          {step.error.code ? `${String(step.error.code)}: ` : ''}
          {String(step.error.message ?? '')}
        </p>
      )}
      {approval && canOperate && step.status === 'waiting' && <ApprovalForm approval={approval} />}
      {step.items && <MapItems workflowId={workflowId} runId={runId} step={step} />}
      <h3>Input</h3>
      <Json value={step.input} label="Step input" />
      <h3>Output</h3>
      <Json value={step.output} label="Step output" />
    </aside>
  );
}

/** A map step's items: counts by status, then each item's status, attempts, output and error, paged. */
function MapItems({ workflowId, runId, step }: { workflowId: string; runId: string; step: StepRun }) {
  const { session } = useSession();
  const counts = Object.entries(step.items ?? {}).filter(([, n]) => typeof n === 'number' && n > 0);
  return (
    <>
      <h3>Items</h3>
      <p>{counts.map(([status, n]) => `${n} ${status}`).join(' · ') || 'none yet'}</p>
      <PagedTable
        caption={`Items of step ${step.id}`}
        queryKey={['items', runId, step.id, step.status, step.attempts]}
        cursorParam="items"
        empty="No items."
        rowKey={(item) => String(item.index)}
        fetchPage={async (cursor?: string) =>
          unwrap(
            await session.client.GET('/api/workflows/{id}/runs/{runId}/steps/{stepId}/items', {
              params: { path: { id: workflowId, runId, stepId: step.id }, query: { limit: 50, ...(cursor ? { cursor } : {}) } },
            }),
          )
        }
        columns={[
          { header: 'Item', cell: (item) => item.index },
          { header: 'Status', cell: (item) => <Status status={item.status} /> },
          { header: 'Attempts', cell: (item) => item.attempts },
          { header: 'Finished', cell: (item) => when(item.finishedAt) },
          {
            header: 'Output or error',
            cell: (item) =>
              item.error ? (
                <span className="error">{String(item.error.message ?? item.error.code ?? '')}</span>
              ) : (
                <code>{item.output === undefined || item.output === null ? '—' : JSON.stringify(item.output).slice(0, 120)}</code>
              ),
          },
        ]}
      />
    </>
  );
}

/** The definition the run ran: the workflow's current one, or the version it names. */
async function definitionOf(
  session: ReturnType<typeof useSession>['session'],
  workflowId: string,
  version: number,
): Promise<{ steps: Array<{ id: string; needs?: string[] }> }> {
  const workflow = unwrap(await session.client.GET('/api/workflows/{id}', { params: { path: { id: workflowId } } }));
  if (workflow.version === version) return workflow;
  let cursor: string | undefined;
  do {
    const page = unwrap(
      await session.client.GET('/api/workflows/{id}/versions', {
        params: { path: { id: workflowId }, query: { limit: 100, ...(cursor ? { cursor } : {}) } },
      }),
    );
    const found = page.data.find((v) => v.version === version);
    if (found) return found;
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return { steps: [] };
}
