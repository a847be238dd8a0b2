import { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { decodeCursor, PageRequest } from '../shared/pagination/cursor';

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
