import { DomainError } from '../errors/domain-error';
import { UUID } from '../http/uuid-param.pipe';

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

export interface PageRequest {
  limit: number;
  cursor?: string;
}

/** Position of the last row of a page in (createdAt desc, id desc) order. */
export interface KeysetPosition {
  createdAt: Date;
  id: string;
}

export function encodeCursor(position: KeysetPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt.toISOString(), position.id])).toString('base64url');
}

export function decodeCursor(cursor: string): KeysetPosition {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof createdAt !== 'string' || typeof id !== 'string' || !UUID.test(id)) throw new Error('bad cursor');
    const date = new Date(createdAt);
    // Only what a page could have written: a real time the database can compare with.
    const year = date.getUTCFullYear();
    if (Number.isNaN(date.getTime()) || year < 1970 || year > 9999) throw new Error('bad cursor');
    return { createdAt: date, id };
  } catch {
    throw new DomainError('VALIDATION_FAILED', 'The cursor is not valid', [
      { path: 'cursor', message: 'cursor must be a value returned as nextCursor' },
    ]);
  }
}

/** A cursor into a list in index order (a map step's items): the last index of the page. */
export function encodeIndexCursor(index: number): string {
  return Buffer.from(JSON.stringify([index])).toString('base64url');
}

export function decodeIndexCursor(cursor: string): number {
  try {
    const [index] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown];
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > 1_000_000) throw new Error('bad cursor');
    return index;
  } catch {
    throw new DomainError('VALIDATION_FAILED', 'The cursor is not valid', [
      { path: 'cursor', message: 'cursor must be a value returned as nextCursor' },
    ]);
  }
}

/** Builds a page from `limit + 1` rows fetched in keyset order. */
export function toPage<T extends KeysetPosition, R>(rows: T[], limit: number, map: (row: T) => R): Page<R> {
  const more = rows.length > limit;
  const items = more ? rows.slice(0, limit) : rows;
  return { data: items.map(map), nextCursor: more ? encodeCursor(items[items.length - 1]) : null };
}

/** Status and time filters of a history (executions, runs): a status, a time range, an id. */
export interface HistoryFilters {
  status?: string;
  since?: Date;
  /** Created before this time. */
  until?: Date;
  /** The one record with this id (a search by id). */
  id?: string;
}
