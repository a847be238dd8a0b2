import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useSearchParams } from 'react-router';
import { ErrorNote } from './Layout';

export interface Column<T> {
  header: string;
  cell: (row: T) => React.ReactNode;
}

/**
 * A list the API pages with a cursor, one page at a time: the cursor is in the URL (a page can
 * be shared), under `cursorParam` (a page with several tables gives each its own), and the
 * caller's filters are part of `queryKey`.
 */
export function PagedTable<T extends object>({
  caption,
  queryKey,
  fetchPage,
  columns,
  rowKey,
  empty,
  refetchMs,
  cursorParam = 'cursor',
}: {
  caption: string;
  queryKey: unknown[];
  fetchPage: (cursor: string | undefined) => Promise<{ data: T[]; nextCursor?: string | null }>;
  columns: Array<Column<NoInfer<T>>>;
  rowKey?: (row: NoInfer<T>) => string;
  empty: string;
  refetchMs?: number;
  cursorParam?: string;
}) {
  const [params, setParams] = useSearchParams();
  const cursor = params.get(cursorParam) ?? undefined;
  const page = useQuery({
    queryKey: [...queryKey, cursor],
    placeholderData: keepPreviousData,
    ...(refetchMs ? { refetchInterval: refetchMs } : {}),
    queryFn: () => fetchPage(cursor),
  });
  const go = (next: string | null) => {
    const changed = new URLSearchParams(params);
    if (next) changed.set(cursorParam, next);
    else changed.delete(cursorParam);
    setParams(changed);
  };
  return (
    <>
      <ErrorNote error={page.error} />
      <table>
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            {columns.map((column) => (
              <th scope="col" key={column.header}>
                {column.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {page.data?.data.map((row, i) => (
            <tr key={rowKey?.(row) ?? (row as { id?: string }).id ?? i}>
              {columns.map((column) => (
                <td key={column.header}>{column.cell(row)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {page.data && page.data.data.length === 0 && <p>{empty}</p>}
      <div className="actions">
        {cursor && (
          <button type="button" onClick={() => go(null)}>
            First page
          </button>
        )}
        {page.data?.nextCursor && (
          <button type="button" onClick={() => go(page.data!.nextCursor!)}>
            Next page
          </button>
        )}
      </div>
    </>
  );
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/** The statuses a run or an execution can have, as the API filters them. */
export const RUN_STATUSES = ['queued', 'running', 'waiting', 'succeeded', 'failed', 'canceled', 'timed_out'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** A status filter: `any`, or one of RUN_STATUSES. */
export function StatusSelect({ value, onChange }: { value: RunStatus | ''; onChange: (status: RunStatus | '') => void }) {
  return (
    <label>
      Status
      <select value={value} onChange={(event) => onChange(event.target.value as RunStatus | '')}>
        <option value="">any</option>
        {RUN_STATUSES.map((s) => (
          <option key={s}>{s}</option>
        ))}
      </select>
    </label>
  );
}
