import { useState } from 'react';
import { useSearchParams } from 'react-router';
import { RunStatus, StatusSelect } from './PagedTable';

const RANGES: Record<string, number | null> = {
  'any time': null,
  'last hour': 3600_000,
  'last 24 hours': 86_400_000,
  'last 7 days': 7 * 86_400_000,
  between: null,
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What the API's history lists (runs, executions) filter by. */
export interface HistoryQuery {
  status?: RunStatus;
  since?: string;
  until?: string;
  id?: string;
}

/**
 * The filters of a history list, all in the URL (a view can be shared): status, a time range
 * (a recent window, or between two local times) and an id. `query()` gives the API's query at
 * the time of the fetch, so a recent window moves with each refresh; `key` changes with the filters.
 */
export function useHistoryFilters() {
  const [params, setParams] = useSearchParams();
  const get = (name: string) => params.get(name) ?? '';
  const range = get('range') || 'any time';
  /** A filter changed: back to the first page. */
  const set = (changes: Record<string, string | null>) => {
    const next = new URLSearchParams(params);
    for (const [name, value] of Object.entries(changes)) {
      if (value) next.set(name, value);
      else next.delete(name);
    }
    next.delete('cursor');
    setParams(next);
  };
  const query = (): HistoryQuery => {
    const recentMs = RANGES[range];
    const iso = (local: string) => (local ? new Date(local).toISOString() : undefined);
    return {
      ...(get('status') ? { status: get('status') as RunStatus } : {}),
      ...(recentMs ? { since: new Date(Date.now() - recentMs).toISOString() } : {}),
      ...(range === 'between' && get('from') ? { since: iso(get('from')) } : {}),
      ...(range === 'between' && get('to') ? { until: iso(get('to')) } : {}),
      ...(get('id') ? { id: get('id') } : {}),
    };
  };
  return { get, range, set, query, key: ['status', 'range', 'from', 'to', 'id'].map(get) };
}

/** The filters' form: status, time range, and a search by id. */
export function HistoryFilters({ filters, idLabel }: { filters: ReturnType<typeof useHistoryFilters>; idLabel: string }) {
  const { get, range, set } = filters;
  const [id, setId] = useState(get('id'));
  const [idProblem, setIdProblem] = useState('');
  return (
    <form
      className="filters"
      role="search"
      onSubmit={(event) => {
        event.preventDefault();
        const wanted = id.trim();
        if (wanted && !UUID.test(wanted)) return setIdProblem(`${idLabel} is a UUID, like 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.`);
        setIdProblem('');
        set({ id: wanted || null });
      }}
    >
      <StatusSelect value={get('status') as RunStatus | ''} onChange={(next) => set({ status: next || null })} />
      <label>
        Created
        <select value={range} onChange={(event) => set({ range: event.target.value === 'any time' ? null : event.target.value })}>
          {Object.keys(RANGES).map((r) => (
            <option key={r}>{r}</option>
          ))}
        </select>
      </label>
      {range === 'between' && (
        <>
          <label>
            From
            <input type="datetime-local" value={get('from')} onChange={(event) => set({ from: event.target.value || null })} />
          </label>
          <label>
            To
            <input type="datetime-local" value={get('to')} onChange={(event) => set({ to: event.target.value || null })} />
          </label>
        </>
      )}
      <label>
        {idLabel}
        <input value={id} onChange={(event) => setId(event.target.value)} placeholder="id" size={38} spellCheck={false} />
      </label>
      <button type="submit">Find</button>
      {idProblem && (
        <span role="alert" className="error">
          {idProblem}
        </span>
      )}
    </form>
  );
}
