import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams, useSearchParams } from 'react-router';
import { unwrap } from '../../../clients/typescript/src/index';
import { ErrorNote, Json, Status } from '../components/Layout';
import { PagedTable, when } from '../components/PagedTable';
import { useCanOperate, useSession } from '../components/session-context';

/**
 * A workflow's inbound webhook trigger: where senders post and how they prove it, the requests
 * it received (one of them in full: headers, query, body), and a replay of one as a new run
 * (admins and members, as the API allows).
 */
export function TriggerPage() {
  const { id = '', tid = '' } = useParams();
  const { session } = useSession();
  const canOperate = useCanOperate();
  const queries = useQueryClient();
  const [params, setParams] = useSearchParams();
  const shown = params.get('event');
  const trigger = useQuery({
    queryKey: ['trigger', id, tid],
    queryFn: async () => unwrap(await session.client.GET('/api/workflows/{id}/triggers/{tid}', { params: { path: { id, tid } } })),
  });
  const workflow = useQuery({
    queryKey: ['workflow', id],
    queryFn: async () => unwrap(await session.client.GET('/api/workflows/{id}', { params: { path: { id } } })),
  });
  const replay = useMutation({
    mutationFn: async (eid: string) =>
      unwrap(await session.client.POST('/api/workflows/{id}/triggers/{tid}/events/{eid}/replay', { params: { path: { id, tid, eid } } })),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['trigger-events', id, tid] }),
  });
  const show = (eid: string | null) => {
    const next = new URLSearchParams(params);
    if (eid) next.set('event', eid);
    else next.delete('event');
    setParams(next);
  };
  if (trigger.error) return <ErrorNote error={trigger.error} />;
  if (!trigger.data) return <p role="status">Loading…</p>;
  const t = trigger.data;
  // Where this console reaches the service; the API's url is on its PUBLIC_URL, shown when it differs.
  const url = `${window.location.origin}/api/hooks/${t.id}`;
  return (
    <section>
      <h1>Trigger {t.name ?? t.id}</h1>
      <p>
        A webhook trigger of <Link to={`/workflows/${id}`}>{workflow.data?.name ?? 'its workflow'}</Link> ·{' '}
        <Link to={`/runs?workflowId=${id}`}>the workflow's runs</Link>
      </p>
      <dl className="facts">
        <dt>URL</dt>
        <dd>
          <code aria-label="Trigger URL">{url}</code> (POST, no bearer token: authenticated by its scheme)
        </dd>
        {t.url !== url && (
          <>
            <dt>Public URL</dt>
            <dd>
              <code>{t.url}</code>
            </dd>
          </>
        )}
        <dt>Scheme</dt>
        <dd>{t.scheme}</dd>
        {t.scheme === 'hmac-sha256' && (
          <>
            <dt>Signature</dt>
            <dd>
              header <code>{t.signatureHeader}</code>, {t.signatureEncoding},{' '}
              {t.signaturePrefix ? (
                <>
                  prefix <code>{t.signaturePrefix}</code>
                </>
              ) : (
                'no prefix'
              )}
            </dd>
          </>
        )}
        <dt>Same delivery when</dt>
        <dd>
          {t.dedupe}
          {t.dedupe === 'header' && t.dedupeHeader ? (
            <>
              {' '}
              <code>{t.dedupeHeader}</code>
            </>
          ) : null}
        </dd>
        <dt>Run input</dt>
        <dd>{t.mapping ? <code>{t.mapping}</code> : 'the body as it is'}</dd>
        <dt>Answers</dt>
        <dd>{t.responseMode === 'sync' ? `the run's output, waiting up to ${t.waitSeconds} s` : 'at once, with the run id'}</dd>
        <dt>Workflow version</dt>
        <dd>{t.workflowVersion ?? 'the current one'}</dd>
        <dt>Enabled</dt>
        <dd>{t.enabled ? 'yes' : 'no'}</dd>
        <dt>Created</dt>
        <dd>{when(t.createdAt)}</dd>
        <dt>Updated</dt>
        <dd>{when(t.updatedAt)}</dd>
      </dl>
      <h2>Events</h2>
      <ErrorNote error={replay.error} />
      {replay.data && (
        <p role="status">
          Replayed as run <Link to={`/workflows/${id}/runs/${replay.data.runId}`}>{replay.data.runId}</Link> ({replay.data.status})
        </p>
      )}
      <PagedTable
        caption="Requests the trigger received, newest first"
        queryKey={['trigger-events', id, tid]}
        cursorParam="events"
        refetchMs={5000}
        empty="No requests received yet."
        fetchPage={async (cursor?: string) =>
          unwrap(
            await session.client.GET('/api/workflows/{id}/triggers/{tid}/events', {
              params: { path: { id, tid }, query: { limit: 50, ...(cursor ? { cursor } : {}) } },
            }),
          )
        }
        columns={[
          { header: 'Event', cell: (e) => <code>{e.id}</code> },
          { header: 'Received', cell: (e) => when(e.receivedAt) },
          { header: 'Source', cell: (e) => e.source },
          { header: 'Status', cell: (e) => <Status status={e.status} /> },
          { header: 'Run', cell: (e) => (e.runId ? <Link to={`/workflows/${id}/runs/${e.runId}`}>{e.runId}</Link> : '—') },
          { header: 'Replay of', cell: (e) => (e.replayOf ? <code>{e.replayOf}</code> : '') },
          { header: 'Error', cell: (e) => e.error ?? '' },
          {
            header: 'Actions',
            cell: (e) => (
              <div className="actions">
                <button type="button" onClick={() => show(e.id)} aria-pressed={shown === e.id} aria-label={`Show event ${e.id}`}>
                  Show
                </button>
                {canOperate && (
                  <button type="button" onClick={() => replay.mutate(e.id)} disabled={replay.isPending} aria-label={`Replay event ${e.id}`}>
                    Replay
                  </button>
                )}
              </div>
            ),
          },
        ]}
      />
      {shown && <EventDetail workflowId={id} triggerId={tid} eventId={shown} onClose={() => show(null)} />}
    </section>
  );
}

/** One received request as the API kept it: headers (without credentials), query and body. */
function EventDetail({
  workflowId,
  triggerId,
  eventId,
  onClose,
}: {
  workflowId: string;
  triggerId: string;
  eventId: string;
  onClose: () => void;
}) {
  const { session } = useSession();
  const event = useQuery({
    queryKey: ['trigger-event', workflowId, triggerId, eventId],
    queryFn: async () =>
      unwrap(
        await session.client.GET('/api/workflows/{id}/triggers/{tid}/events/{eid}', {
          params: { path: { id: workflowId, tid: triggerId, eid: eventId } },
        }),
      ),
  });
  return (
    <div className="card" role="region" aria-label={`Event ${eventId}`}>
      <h2>Event {eventId}</h2>
      <ErrorNote error={event.error} />
      {event.data && (
        <>
          <dl className="facts">
            <dt>Received</dt>
            <dd>{when(event.data.receivedAt)}</dd>
            <dt>Source</dt>
            <dd>{event.data.source}</dd>
            <dt>Status</dt>
            <dd>
              <Status status={event.data.status} />
              {event.data.error ? ` ${event.data.error}` : ''}
            </dd>
            <dt>Same-delivery key</dt>
            <dd>{event.data.dedupeKey ? <code>{event.data.dedupeKey}</code> : '—'}</dd>
          </dl>
          <h3>Headers</h3>
          <Json value={event.data.headers} label="Headers" />
          <h3>Query</h3>
          <Json value={event.data.query} label="Query" />
          <h3>Body</h3>
          <Json value={event.data.body} label="Body" />
        </>
      )}
      <div className="actions">
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
    </div>
  );
}
