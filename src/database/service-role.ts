import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source-options';
import { runMigrationsLocked } from './migrator';

/**
 * The audit log's tables, kept by the migrating role, and what the service's role may do on
 * each: write and read events (never change or remove one: no UPDATE, DELETE or TRUNCATE on the
 * log, and not its owner, so it cannot switch its trigger off), move them out of the inbox once
 * sealed (the inbox's trigger refuses the rest), move a chain's end and sign a keyed start
 * (not where a purge left its beginning), and set an organization's retention.
 */
const AUDIT_GRANTS: Array<[table: string, privileges: string]> = [
  ['audit_events', 'SELECT, INSERT'],
  ['audit_inbox', 'SELECT, INSERT, DELETE'],
  ['audit_chain_heads', 'SELECT, INSERT (organization_id, sequence, hash, keyed_from, keyed_mac), UPDATE (sequence, hash, keyed_mac)'],
  ['audit_settings', 'SELECT, INSERT, UPDATE'],
];
/** The functions of the log: the migrating role's, so `audit_purge` runs as it. */
const AUDIT_FUNCTIONS = ['audit_purge(uuid, integer, integer)', 'audit_events_append_only()', 'audit_inbox_until_sealed()'];
/** TypeORM's record of the migrations: the migrating role's. */
const MIGRATIONS_TABLE = 'migrations';

/**
 * Runs the migrations as the schema's owner (DATABASE_MIGRATION_URL), then hands the service's
 * role (the one `service` connects as) what it needs; answers the migrations it ran.
 */
export async function migrateAsOwner(migrationUrl: string, service: DataSource): Promise<string[]> {
  const [{ role }] = (await service.query('SELECT current_user AS role')) as Array<{ role: string }>;
  const owner = new DataSource(dataSourceOptions(migrationUrl, 2));
  await owner.initialize();
  try {
    return await runMigrationsLocked(owner, { afterMigrations: () => handOverToServiceRole(owner, role) });
  } finally {
    await owner.destroy();
  }
}

/**
 * As the migrating role, in one transaction: takes the audit log's tables and functions (from
 * an install where the service's role made them), gives the service's role every other table
 * of the schema (it attaches and drops history partitions and tunes its hot tables, which takes
 * the owner), and on the log's tables only AUDIT_GRANTS. Run after every migration run, so the
 * tables a migration adds are handed over at the same boot. The migrating role must be able to
 * act as the service's (`GRANT <service role> TO <migrating role>`) to give it tables.
 */
export async function handOverToServiceRole(owner: DataSource, serviceRole: string): Promise<void> {
  await owner.transaction(async (tx) => {
    const [{ me }] = (await tx.query('SELECT current_user AS me')) as Array<{ me: string }>;
    if (me === serviceRole) return;
    // First: the owner of a table must be able to create in its schema (and the service makes partitions).
    const schema = ident(((await tx.query('SELECT current_schema() AS s')) as Array<{ s: string }>)[0].s);
    await tx.query(`GRANT USAGE, CREATE ON SCHEMA ${schema} TO ${ident(serviceRole)}`);
    // The job queue (pg-boss) keeps a schema of its own, which the service's role creates and migrates.
    const [{ name: databaseName }] = (await tx.query('SELECT current_database() AS name')) as Array<{ name: string }>;
    await tx.query(`GRANT CREATE ON DATABASE ${ident(databaseName)} TO ${ident(serviceRole)}`);
    const audit = AUDIT_GRANTS.map(([table]) => table);
    const tables = (await tx.query(
      `SELECT c.relname AS name, pg_get_userbyid(c.relowner) AS owner FROM pg_class c
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')`,
    )) as Array<{ name: string; owner: string }>;
    for (const { name, owner: tableOwner } of tables) {
      const ours = audit.includes(name) || name === MIGRATIONS_TABLE;
      if (ours && tableOwner !== me) await tx.query(`ALTER TABLE ${ident(name)} OWNER TO CURRENT_USER`);
      if (!ours && tableOwner === me) await tx.query(`ALTER TABLE ${ident(name)} OWNER TO ${ident(serviceRole)}`);
    }
    for (const fn of AUDIT_FUNCTIONS) await tx.query(`ALTER FUNCTION ${fn} OWNER TO CURRENT_USER`);
    for (const [table, privileges] of AUDIT_GRANTS) {
      await tx.query(`REVOKE ALL ON ${ident(table)} FROM ${ident(serviceRole)}`);
      await tx.query(`GRANT ${privileges} ON ${ident(table)} TO ${ident(serviceRole)}`);
    }
    await tx.query(`REVOKE ALL ON ${ident(MIGRATIONS_TABLE)} FROM ${ident(serviceRole)}`);
    await tx.query(`GRANT SELECT ON ${ident(MIGRATIONS_TABLE)} TO ${ident(serviceRole)}`);
    await tx.query(`GRANT EXECUTE ON FUNCTION ${AUDIT_FUNCTIONS[0]} TO ${ident(serviceRole)}`);
  });
}

/**
 * Says at boot when the audit log does not hold against the service's own role: a superuser,
 * or the owner of `audit_events` (or a member of its owner), can switch its trigger off.
 */
export async function warnWhenServiceOwnsAuditLog(service: DataSource): Promise<void> {
  const [row] = (await service.query(
    `SELECT current_user AS role, r.rolsuper AS superuser, pg_has_role(current_user, c.relowner, 'USAGE') AS owner
       FROM pg_roles r, pg_class c WHERE r.rolname = current_user AND c.oid = to_regclass('audit_events')`,
  )) as Array<{ role: string; superuser: boolean; owner: boolean }>;
  if (!row || !(row.superuser || row.owner)) return;
  new Logger('Database').warn(
    `The audit log is not append-only against the service's own database role "${row.role}": it ${row.superuser ? 'is a superuser' : 'owns audit_events'} ` +
      'and could switch its trigger off. Run the migrations as another role with DATABASE_MIGRATION_URL (docs/operating.md, database roles); the keyed chain still shows a rewrite.',
  );
}

function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
