import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * scripts/check-migrations.mjs (in `npm run lint`) on planted migration directories: a
 * migration that only does what is safe on a large table passes; each lock-holding statement
 * of a bad one is named with its file and rule; the committed migrations pass.
 */
const ROOT = resolve(__dirname, '..');
const SCRIPT = join(ROOT, 'scripts/check-migrations.mjs');
const NODE = existsSync(join(ROOT, 'node_modules/node/bin/node')) ? join(ROOT, 'node_modules/node/bin/node') : process.execPath;

const migration = (name: string, statements: string[], extra = '') => `import { MigrationInterface, QueryRunner } from 'typeorm';

export class ${name} implements MigrationInterface {
  name = '${name}';${extra}

  public async up(queryRunner: QueryRunner): Promise<void> {
${statements.map((sql) => `    await queryRunner.query(\`${sql}\`);`).join('\n')}
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(\`ALTER TABLE "users" ALTER COLUMN "email" TYPE text\`);
  }
}
`;

const GOOD = migration(
  'Good1800000000000',
  [
    `CREATE TABLE "reports" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_r" PRIMARY KEY ("id"))`,
    `CREATE INDEX "reports_org_idx" ON "reports" ("organization_id")`,
    `ALTER TABLE "reports" ADD CONSTRAINT "FK_r" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE`,
    `ALTER TABLE "users" ADD "nickname" character varying(100)`,
    `ALTER TABLE "users" ADD "logins" integer NOT NULL DEFAULT '0'`,
    `ALTER TABLE "users" ADD "seen_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now()`,
    `ALTER TABLE "agents" ADD CONSTRAINT "CHK_timeout" CHECK ("timeout_ms" > 0) NOT VALID`,
    `ALTER TABLE "agents" VALIDATE CONSTRAINT "CHK_timeout"`,
    `CREATE INDEX CONCURRENTLY "agents_name_idx" ON "agents" ("name")`,
  ],
  '\n  transaction = false;',
);

const BAD = migration('Bad1800000000001', [
  `ALTER TABLE "users" ADD "token" uuid NOT NULL DEFAULT gen_random_uuid()`,
  `ALTER TABLE "agents" ADD "position" integer NOT NULL`,
  `CREATE UNIQUE INDEX "agents_name_key" ON "agents" ("organization_id", "name")`,
  `ALTER TABLE "public"."agent_executions" ALTER COLUMN "attempts" TYPE bigint`,
  `ALTER TABLE "workflows" ADD CONSTRAINT "FK_w" FOREIGN KEY ("created_by") REFERENCES "users"("id")`,
  `ALTER TABLE "users" ALTER COLUMN "first_name" SET NOT NULL`,
  `CREATE INDEX CONCURRENTLY "users_role_idx" ON "users" ("role")`,
  `ALTER TABLE "organizations" ADD "serial_no" bigserial, ADD CONSTRAINT "UQ_slug" UNIQUE ("slug")`,
]);

describe('check-migrations', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'migrations-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const check = (directory: string) => spawnSync(NODE, [SCRIPT, directory], { encoding: 'utf8' });

  it('passes a migration that only does what is safe on a large table', () => {
    writeFileSync(join(dir, '1800000000000-Good.ts'), GOOD);
    const result = check(dir);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('names the file, the rule and the statement of every lock-holding statement', () => {
    writeFileSync(join(dir, '1800000000000-Good.ts'), GOOD);
    writeFileSync(join(dir, '1800000000001-Bad.ts'), BAD);
    const result = check(dir);
    expect(result.status).toBe(1);
    const failures = [...result.stderr.matchAll(/^(\S+): \[(\w+)\] .*\n {4}(.*)$/gm)].map(([, file, rule, statement]) => ({
      file,
      rule,
      statement,
    }));
    const at = (rule: string, statement: string) => ({ file: '1800000000001-Bad.ts', rule, statement });
    expect(failures).toEqual([
      at('volatileDefault', `ALTER TABLE "users" ADD "token" uuid NOT NULL DEFAULT gen_random_uuid()`),
      at('notNullWithoutDefault', `ALTER TABLE "agents" ADD "position" integer NOT NULL`),
      at('indexNotConcurrent', `CREATE UNIQUE INDEX "agents_name_key" ON "agents" ("organization_id", "name")`),
      at('columnType', `ALTER TABLE "public"."agent_executions" ALTER COLUMN "attempts" TYPE bigint`),
      at('constraintNotValid', `ALTER TABLE "workflows" ADD CONSTRAINT "FK_w" FOREIGN KEY ("created_by") REFERENCES "users"("id")`),
      at('setNotNull', `ALTER TABLE "users" ALTER COLUMN "first_name" SET NOT NULL`),
      at('concurrentlyInTransaction', `CREATE INDEX CONCURRENTLY "users_role_idx" ON "users" ("role")`),
      at('volatileDefault', `ALTER TABLE "organizations" ADD "serial_no" bigserial, ADD CONSTRAINT "UQ_slug" UNIQUE ("slug")`),
      at('indexConstraint', `ALTER TABLE "organizations" ADD "serial_no" bigserial, ADD CONSTRAINT "UQ_slug" UNIQUE ("slug")`),
    ]);
    expect(result.stderr).toContain('use CREATE INDEX CONCURRENTLY in a migration with transaction = false');
  });

  it('passes the committed migrations', () => {
    const result = check(join(ROOT, 'src/database/migrations'));
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});
