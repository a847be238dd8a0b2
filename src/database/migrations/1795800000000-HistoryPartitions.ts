import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The history tables become partitioned by ranges of their time-ordered ids (one range a week,
 * created ahead and dropped behind by HistoryPartitions), each child table by its parent's id,
 * so that a week's executions, runs, trigger events and webhook messages go with their steps,
 * items, waits and attempts when their partition is dropped.
 *
 * Online: each table is renamed to `<table>_default` and attached, as it is, as the DEFAULT
 * partition of a new partitioned table of the same name, columns, indexes and constraints. Its
 * indexes and foreign keys to configuration tables are attached, not rebuilt; a child table's
 * key to its parent is checked once (one scan of the child, which blocks its writes, not its
 * reads, for that long). The rows written before (random ids) stay in the default partitions,
 * found by id and listed as before, until the retention removes them.
 *
 * `workflow_trigger_events_dedupe_key` cannot be unique across partitions (a unique index of a
 * partitioned table must hold the partition key): the default partition keeps it, each new
 * partition gets its own, and the insert takes a lock on the key (TriggerEventRepository).
 * `webhook_attempts`'s primary key becomes (message_id, id) for the same reason (built on the
 * old table by the attach).
 */
export class HistoryPartitions1795800000000 implements MigrationInterface {
  name = 'HistoryPartitions1795800000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    for (const table of TABLES) await partition(queryRunner, table);
    await queryRunner.query(`ALTER TABLE "organizations" ADD "history_retention_days" integer`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "organizations" DROP COLUMN "history_retention_days"`);
    // Children first: a parent's rows are referenced from its children's partitions.
    for (const table of [...TABLES].reverse()) await unpartition(queryRunner, table);
  }
}

interface PartitionedTable {
  name: string;
  /** The column whose ranges are the partitions: the table's id, or its parent's. */
  key: string;
  /** The primary key's columns, when they change (they must hold the key). */
  primaryKey?: string[];
  /** The parent whose id `key` holds. */
  parent?: string;
  /** Unique indexes that stay on the default partition alone. */
  defaultOnly?: string[];
}

/** Parents before their children. */
const TABLES: PartitionedTable[] = [
  { name: 'agent_executions', key: 'id' },
  { name: 'agent_execution_steps', key: 'execution_id', parent: 'agent_executions' },
  { name: 'workflow_runs', key: 'id' },
  { name: 'workflow_run_steps', key: 'run_id', parent: 'workflow_runs' },
  { name: 'workflow_run_items', key: 'run_id', parent: 'workflow_runs' },
  { name: 'workflow_run_waits', key: 'run_id', parent: 'workflow_runs' },
  { name: 'workflow_trigger_events', key: 'id', defaultOnly: ['workflow_trigger_events_dedupe_key'] },
  { name: 'webhook_messages', key: 'id' },
  { name: 'webhook_attempts', key: 'message_id', parent: 'webhook_messages', primaryKey: ['message_id', 'id'] },
];

const LEGACY = '_default';

async function partition(queryRunner: QueryRunner, table: PartitionedTable): Promise<void> {
  const legacy = `${table.name}${LEGACY}`;
  const indexes: Array<{ name: string; definition: string; constraint: string | null; kind: string | null }> = await queryRunner.query(
    `SELECT i.relname AS name, pg_get_indexdef(x.indexrelid) AS definition, c.conname AS constraint, c.contype AS kind
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
       LEFT JOIN pg_constraint c ON c.conindid = x.indexrelid AND c.conrelid = x.indrelid
      WHERE x.indrelid = $1::regclass`,
    [table.name],
  );
  const keys: Array<{ name: string; definition: string }> = await queryRunner.query(
    `SELECT conname AS name, pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'f'`,
    [table.name],
  );

  await queryRunner.query(`ALTER TABLE "${table.name}" RENAME TO "${legacy}"`);
  // The names go to the new table; the default partition's own take a suffix.
  for (const index of indexes) {
    if (index.constraint) await queryRunner.query(`ALTER TABLE "${legacy}" RENAME CONSTRAINT "${index.constraint}" TO "${suffixed(index.name)}"`);
    else await queryRunner.query(`ALTER INDEX "${index.name}" RENAME TO "${suffixed(index.name)}"`);
  }
  for (const key of keys) await queryRunner.query(`ALTER TABLE "${legacy}" RENAME CONSTRAINT "${key.name}" TO "${suffixed(key.name)}"`);

  await queryRunner.query(
    `CREATE TABLE "${table.name}" (LIKE "${legacy}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE) PARTITION BY RANGE ("${table.key}")`,
  );
  for (const index of indexes) {
    if (table.defaultOnly?.includes(index.name)) continue;
    if (index.kind === 'p') {
      const columns = table.primaryKey ?? primaryKeyColumns(index.definition);
      const name = table.primaryKey ? `PK_${table.name}` : index.name;
      await queryRunner.query(`ALTER TABLE "${table.name}" ADD CONSTRAINT "${name}" PRIMARY KEY (${columns.map((c) => `"${c}"`).join(', ')})`);
    } else {
      await queryRunner.query(index.definition.replace(`ON public.${legacy} `, `ON public."${table.name}" `));
    }
  }
  for (const key of keys) {
    const definition = table.parent ? key.definition.replace(`REFERENCES ${table.parent}${LEGACY}(`, `REFERENCES "${table.parent}"(`) : key.definition;
    await queryRunner.query(`ALTER TABLE "${table.name}" ADD CONSTRAINT "${key.name}" ${definition}`);
  }
  if (table.primaryKey) {
    // Its old primary key gives way to the new one, built on it by the attach.
    const old = indexes.find((index) => index.kind === 'p');
    if (old) await queryRunner.query(`ALTER TABLE "${legacy}" DROP CONSTRAINT "${suffixed(old.constraint!)}"`);
  }
  await queryRunner.query(`ALTER TABLE "${table.name}" ATTACH PARTITION "${legacy}" DEFAULT`);
  // The child's key to the parent's old table is now the new table's, checked on attach.
  if (table.parent) {
    for (const key of keys) await queryRunner.query(`ALTER TABLE "${legacy}" DROP CONSTRAINT IF EXISTS "${suffixed(key.name)}"`);
  }
}

async function unpartition(queryRunner: QueryRunner, table: PartitionedTable): Promise<void> {
  const legacy = `${table.name}${LEGACY}`;
  const partitions: Array<{ name: string }> = await queryRunner.query(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass AND c.relname <> $2`,
    [table.name, legacy],
  );
  // Rows of the week partitions move back into the one table.
  for (const { name } of partitions) {
    await queryRunner.query(`ALTER TABLE "${table.name}" DETACH PARTITION "${name}"`);
    await queryRunner.query(`INSERT INTO "${table.name}" SELECT * FROM "${name}"`);
    await queryRunner.query(`DROP TABLE "${name}"`);
  }
  await queryRunner.query(`ALTER TABLE "${table.name}" DETACH PARTITION "${legacy}"`);
  const keys: Array<{ name: string; definition: string }> = await queryRunner.query(
    `SELECT conname AS name, pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'f'`,
    [table.name],
  );
  // The children (already back to one table each) refer to this one: they will refer to the old table again.
  const children: Array<{ child: string; name: string; definition: string }> = await queryRunner.query(
    `SELECT conrelid::regclass::text AS child, conname AS name, pg_get_constraintdef(oid) AS definition
       FROM pg_constraint WHERE confrelid = $1::regclass AND contype = 'f' AND conparentid = 0`,
    [table.name],
  );
  for (const key of children) await queryRunner.query(`ALTER TABLE ${key.child} DROP CONSTRAINT "${key.name}"`);
  await queryRunner.query(`DROP TABLE "${table.name}"`);
  await queryRunner.query(`ALTER TABLE "${legacy}" RENAME TO "${table.name}"`);
  const indexes: Array<{ name: string; constraint: string | null }> = await queryRunner.query(
    `SELECT i.relname AS name, c.conname AS constraint FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
       LEFT JOIN pg_constraint c ON c.conindid = x.indexrelid AND c.conrelid = x.indrelid WHERE x.indrelid = $1::regclass`,
    [table.name],
  );
  for (const index of indexes) {
    if (!index.name.endsWith(LEGACY)) continue;
    const original = index.name.slice(0, -LEGACY.length);
    if (index.constraint) await queryRunner.query(`ALTER TABLE "${table.name}" RENAME CONSTRAINT "${index.constraint}" TO "${original}"`);
    else await queryRunner.query(`ALTER INDEX "${index.name}" RENAME TO "${original}"`);
  }
  for (const key of keys) {
    const own = await queryRunner.query(`SELECT 1 FROM pg_constraint WHERE conrelid = $1::regclass AND conname = $2`, [table.name, key.name]);
    if (!own.length) await queryRunner.query(`ALTER TABLE "${table.name}" ADD CONSTRAINT "${key.name}" ${key.definition}`);
  }
  for (const key of children) await queryRunner.query(`ALTER TABLE ${key.child} ADD CONSTRAINT "${key.name}" ${key.definition}`);
}

function suffixed(name: string): string {
  return `${name}${LEGACY}`;
}

/** The columns of `CREATE UNIQUE INDEX ... USING btree (a, b)`. */
function primaryKeyColumns(definition: string): string[] {
  const columns = /\(([^)]*)\)\s*$/.exec(definition)![1];
  return columns.split(',').map((c) => c.trim().replace(/^"|"$/g, ''));
}
