import { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { decodeCursor, HistoryFilters, PageRequest } from '../shared/pagination/cursor';

/**
 * Newest first, keyset-paginated on (created_at, id): stable under inserts and served by an
 * index on (organization_id, created_at DESC, id DESC). Fetches one row more than the page
 * so `toPage` knows whether another page follows.
 */
export function keysetPage<T extends ObjectLiteral>(qb: SelectQueryBuilder<T>, page: PageRequest): SelectQueryBuilder<T> {
  const alias = qb.alias;
  if (page.cursor) {
    const { createdAt, id } = decodeCursor(page.cursor);
    qb.andWhere(`(${alias}.createdAt, ${alias}.id) < (:cursorAt, :cursorId)`, { cursorAt: createdAt, cursorId: id });
  }
  return qb
    .orderBy(`${alias}.createdAt`, 'DESC')
    .addOrderBy(`${alias}.id`, 'DESC')
    .limit(page.limit + 1);
}

/**
 * The same newest-first keyset page for plain SQL: `WHERE ... ORDER BY ... LIMIT ...` after
 * `SELECT ... FROM <table>`, with the equality conditions of `scope` (organization first),
 * the history filters and the cursor, and its parameters.
 */
export function keysetSql(scope: Record<string, unknown>, filters: HistoryFilters, page: PageRequest): { tail: string; params: unknown[] } {
  const params: unknown[] = [];
  const where = Object.entries(scope).map(([column, value]) => `${column} = $${params.push(value)}`);
  if (filters.status) where.push(`status = $${params.push(filters.status)}`);
  if (filters.since) where.push(`created_at >= $${params.push(filters.since)}`);
  if (filters.until) where.push(`created_at < $${params.push(filters.until)}`);
  if (filters.id) where.push(`id = $${params.push(filters.id)}`);
  if (page.cursor) {
    const { createdAt, id } = decodeCursor(page.cursor);
    where.push(`(created_at, id) < ($${params.push(createdAt)}, $${params.push(id)})`);
  }
  return { tail: `WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.push(page.limit + 1)}`, params };
}
