import { randomFillSync } from 'node:crypto';

/**
 * Ids of history records (executions, runs, trigger events, webhook messages): UUID version 7
 * (RFC 9562), whose first 48 bits are the creation time in Unix milliseconds. The history tables
 * are partitioned by ranges of these ids, one range a week (`idAt`), so a lookup by id reads one
 * partition and a week's rows are dropped with their partition.
 *
 * Written here rather than taken from a package: the partition bounds are built from the same
 * layout, and the one package that has it (`uuid`) is an ES module this CommonJS build would load
 * through `require(esm)`.
 */
export function timeOrderedId(at: number = Date.now()): string {
  const bytes = Buffer.alloc(16);
  randomBytesInto(bytes, 6);
  bytes.writeUIntBE(at, 0, 6);
  bytes[6] = 0x70 | (bytes[6] & 0x0f); // version 7
  bytes[8] = 0x80 | (bytes[8] & 0x3f); // variant 10
  return format(bytes);
}

/** The smallest time-ordered id of the millisecond `at`: the bound of a partition that starts then. */
export function idAt(at: number): string {
  const bytes = Buffer.alloc(16);
  bytes.writeUIntBE(at, 0, 6);
  return format(bytes);
}

/** When a time-ordered id was made (undefined for ids of other versions, such as random ones). */
export function idTime(id: string): number | undefined {
  if (id[14] !== '7') return undefined;
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/** Random bytes are drawn from the system a pool at a time: one call for every 409 ids, not one each. */
const POOL = Buffer.alloc(4096);
let poolOffset = POOL.length;

/** Fills `target` from `offset` on with random bytes. */
function randomBytesInto(target: Buffer, offset: number): void {
  const length = target.length - offset;
  if (poolOffset + length > POOL.length) {
    randomFillSync(POOL);
    poolOffset = 0;
  }
  POOL.copy(target, offset, poolOffset, poolOffset + length);
  poolOffset += length;
}

function format(bytes: Buffer): string {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
