/**
 * Fails on a migration that would hold a lock on a table that already has rows for as long as
 * the table is big: a rewrite, a full scan under an exclusive lock, or an index built without
 * CONCURRENTLY. Reads the SQL strings of each migration's up(); tables the same migration
 * creates are empty, so anything goes on them. The migrations older than this check are
 * grandfathered by name (GRANDFATHERED). Exits 1 naming the file, the rule and the statement.
 *
 *   node scripts/check-migrations.mjs [directory]   (default: src/database/migrations)
 *
 * A default of now() or CURRENT_TIMESTAMP is allowed: it is stable, not volatile, so
 * PostgreSQL (11 and later) stores it once in the catalog instead of rewriting the table.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';

/** Migrations written before this check, not held to it. Never add a name here. */
const GRANDFATHERED = new Set([
  '1795646282020-Initial',
  '1795647276443-PluginInstallations',
  '1795648883358-Agents',
  '1795650867227-Workflows',
  '1795651894650-License',
  '1795652738456-Saml',
  '1795677573178-CredentialsVersion',
  '1795679413468-SeatQuota',
  '1795688002008-Webhooks',
  '1795697757590-ApiKeys',
]);

/** Functions whose value differs per row: a column defaulting to one makes PostgreSQL rewrite the table. */
const VOLATILE_DEFAULT =
  /\b(random|clock_timestamp|timeofday|gen_random_uuid|uuid_generate_v1|uuid_generate_v1mc|uuid_generate_v4|nextval|txid_current)\s*\(|\b(small|big)?serial\b|\bgenerated\b[^,]*\b(identity|stored)\b/i;

export const RULES = {
  volatileDefault:
    'a new column with a volatile default (or serial, identity, stored generated) rewrites the whole table under an exclusive lock',
  notNullWithoutDefault:
    'a new NOT NULL column without a default fails on a table with rows; add it nullable, backfill in batches, then add a CHECK (...) NOT VALID and VALIDATE it',
  inlineConstraint:
    'a constraint on a new column of an existing table scans it or builds an index under an exclusive lock; add the column, then the constraint NOT VALID or the index CONCURRENTLY',
  indexNotConcurrent:
    'CREATE INDEX on an existing table blocks its writes while it builds; use CREATE INDEX CONCURRENTLY in a migration with transaction = false',
  columnType:
    'ALTER COLUMN ... TYPE rewrites the table (and its indexes) under an exclusive lock; add a new column and backfill it instead',
  setNotNull:
    'SET NOT NULL scans the whole table under an exclusive lock; add CHECK (col IS NOT NULL) NOT VALID, VALIDATE CONSTRAINT it, then SET NOT NULL',
  constraintNotValid:
    'a FOREIGN KEY or CHECK on an existing table is checked against every row under lock; add it NOT VALID, then VALIDATE CONSTRAINT in a later statement',
  indexConstraint:
    'a PRIMARY KEY, UNIQUE or EXCLUDE constraint builds its index under an exclusive lock; build the index CONCURRENTLY, then ADD CONSTRAINT ... USING INDEX',
  rewrite: 'VACUUM FULL, CLUSTER, REINDEX (without CONCURRENTLY) and LOCK TABLE hold an exclusive lock for as long as the table is big',
  concurrentlyInTransaction: 'CONCURRENTLY cannot run inside a transaction: set `transaction = false` on the migration class',
};

/** The source of the up() method: from `up(` to `down(` or the end of the file. */
function upBody(source) {
  const start = source.search(/\bup\s*\(/);
  if (start < 0) return '';
  const end = source.slice(start).search(/\bdown\s*\(/);
  return end < 0 ? source.slice(start) : source.slice(start, start + end);
}

/** The string literals of the code (template literals with `${...}` kept as placeholders). */
function stringLiterals(code) {
  const found = [];
  const literal = /`((?:\\[\s\S]|[^`\\])*)`|'((?:\\[\s\S]|[^'\\])*)'|"((?:\\[\s\S]|[^"\\])*)"/g;
  for (const match of code.matchAll(literal)) found.push(match[1] ?? match[2] ?? match[3]);
  return found;
}

/** Splits on the commas and semicolons that are not inside parentheses or quotes. */
function splitTopLevel(text, separator) {
  const parts = [];
  let depth = 0;
  let quote = null;
  let current = '';
  for (const char of text) {
    if (quote) {
      if (char === quote) quote = null;
    } else if (char === "'" || char === '"') quote = char;
    else if (char === '(') depth++;
    else if (char === ')') depth--;
    else if (char === separator && depth === 0) {
      parts.push(current.trim());
      current = '';
      continue;
    }
    current += char;
  }
  if (current.trim()) parts.push(current.trim());
  return parts;
}

/** `"public"."users"`, `public.users`, `"users"` -> `users`. */
function tableName(identifier) {
  const parts = identifier.split('.');
  return parts[parts.length - 1].replace(/"/g, '').toLowerCase();
}

const SQL_START = /^\s*(CREATE|ALTER|DROP|INSERT|UPDATE|DELETE|VACUUM|CLUSTER|REINDEX|LOCK|COMMENT|REFRESH|WITH|SELECT|SET)\b/i;
const IDENT = '((?:"[^"]+"|[\\w$]+)(?:\\.(?:"[^"]+"|[\\w$]+))?)';

/** Every SQL statement of the migration's up(), in order. */
export function statementsOf(source) {
  return stringLiterals(upBody(source))
    .filter((literal) => SQL_START.test(literal))
    .flatMap((literal) => splitTopLevel(literal, ';'))
    .map((statement) => statement.replace(/\s+/g, ' ').trim())
    .filter(Boolean);
}

/** The problems of one migration: `{ rule, statement }` for each statement that breaks a rule. */
export function checkMigration(source) {
  const statements = statementsOf(source);
  const created = new Set();
  for (const statement of statements) {
    const match = new RegExp(`^CREATE (?:UNLOGGED )?TABLE (?:IF NOT EXISTS )?${IDENT}`, 'i').exec(statement);
    if (match) created.add(tableName(match[1]));
  }
  const existing = (identifier) => !created.has(tableName(identifier));
  const outsideTransaction = /\btransaction\s*[:=]\s*false\b/.test(source);
  const problems = [];
  const flag = (rule, statement) => problems.push({ rule, message: RULES[rule], statement });

  for (const statement of statements) {
    if (/\bCONCURRENTLY\b/i.test(statement) && !outsideTransaction) flag('concurrentlyInTransaction', statement);

    const index = new RegExp(`^CREATE (?:UNIQUE )?INDEX (CONCURRENTLY )?(?:IF NOT EXISTS )?(?:${IDENT} )?ON (?:ONLY )?${IDENT}`, 'i').exec(
      statement,
    );
    if (index) {
      if (!index[1] && existing(index[3])) flag('indexNotConcurrent', statement);
      continue;
    }
    if (
      /^(VACUUM\b.*\bFULL\b|CLUSTER\b|LOCK\b)/i.test(statement) ||
      (/^REINDEX\b/i.test(statement) && !/\bCONCURRENTLY\b/i.test(statement))
    ) {
      flag('rewrite', statement);
      continue;
    }

    const alter = new RegExp(`^ALTER TABLE (?:IF EXISTS )?(?:ONLY )?${IDENT} ([\\s\\S]*)$`, 'i').exec(statement);
    if (!alter || !existing(alter[1])) continue;
    for (const action of splitTopLevel(alter[2], ',')) {
      if (/^ADD (CONSTRAINT\b|PRIMARY KEY\b|UNIQUE\b|FOREIGN KEY\b|CHECK\b|EXCLUDE\b)/i.test(action)) {
        if (/\b(FOREIGN KEY|CHECK)\b/i.test(action) && !/\bNOT VALID\b/i.test(action)) flag('constraintNotValid', statement);
        if (/\b(PRIMARY KEY|UNIQUE|EXCLUDE)\b/i.test(action) && !/\bUSING INDEX\b/i.test(action)) flag('indexConstraint', statement);
      } else if (/^ADD\b/i.test(action)) {
        if (VOLATILE_DEFAULT.test(action)) flag('volatileDefault', statement);
        else if (/\bNOT NULL\b/i.test(action) && !/\bDEFAULT\b/i.test(action)) flag('notNullWithoutDefault', statement);
        if (/\b(REFERENCES|UNIQUE|PRIMARY KEY|CHECK)\b/i.test(action)) flag('inlineConstraint', statement);
      } else if (/^ALTER (?:COLUMN )?\S+ (SET DATA )?TYPE\b/i.test(action)) {
        flag('columnType', statement);
      } else if (/^ALTER (?:COLUMN )?\S+ SET NOT NULL\b/i.test(action)) {
        flag('setNotNull', statement);
      }
    }
  }
  return problems;
}

/** Checks every migration file of `directory` but the grandfathered ones; answers the failures as lines. */
export function checkDirectory(directory) {
  const lines = [];
  for (const file of readdirSync(directory)
    .filter((f) => /\.(ts|js)$/.test(f) && !/\.d\.ts$/.test(f))
    .sort()) {
    if (GRANDFATHERED.has(file.replace(/\.(ts|js)$/, ''))) continue;
    for (const { rule, message, statement } of checkMigration(readFileSync(join(directory, file), 'utf8'))) {
      lines.push(`${file}: [${rule}] ${message}\n    ${statement}`);
    }
  }
  return lines;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const directory = process.argv[2] ?? join(import.meta.dirname, '..', 'src', 'database', 'migrations');
  const failures = checkDirectory(directory);
  if (failures.length) {
    console.error(`Migrations that would lock a large table (see docs/operating.md, "Upgrade"):\n${failures.join('\n')}`);
    process.exit(1);
  }
  console.log(`check-migrations: ${basename(directory)} ok`);
}
