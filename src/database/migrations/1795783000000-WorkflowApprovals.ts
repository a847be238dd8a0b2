import { MigrationInterface, QueryRunner } from 'typeorm';

/** A workflow step's `{ "wait": <boolean> }` written as `{ "detach": true }` (up) or back (down), in SQL over one step `s`. */
const DETACH = `CASE WHEN s ? 'workflow' AND jsonb_typeof(s->'wait') = 'boolean'
  THEN (s - 'wait') || CASE WHEN (s->>'wait')::boolean THEN '{}'::jsonb ELSE '{"detach": true}'::jsonb END ELSE s END`;
const UNDETACH = `CASE WHEN s ? 'workflow' AND s ? 'detach'
  THEN (s - 'detach') || CASE WHEN (s->>'detach')::boolean THEN '{"wait": false}'::jsonb ELSE '{}'::jsonb END ELSE s END`;

/** Rewrites every saved version's steps and onFailure step with `step` (an SQL expression over `s`) where `touched` holds for one. */
function rewriteSteps(step: string, touched: string): string {
  return `UPDATE "workflow_versions" v SET "definition" = jsonb_set(
      CASE WHEN v.definition ? 'onFailure'
        THEN jsonb_set(v.definition, '{onFailure}', (SELECT ${step} FROM (SELECT v.definition->'onFailure' AS s) f))
        ELSE v.definition END,
      '{steps}',
      (SELECT jsonb_agg(${step} ORDER BY n) FROM jsonb_array_elements(v.definition->'steps') WITH ORDINALITY AS t(s, n)))
    WHERE EXISTS (SELECT 1 FROM jsonb_array_elements(v.definition->'steps') AS t(s) WHERE ${touched})
       OR COALESCE((SELECT ${touched} FROM (SELECT v.definition->'onFailure' AS s) f), false)`;
}

/**
 * Wait steps: what a waiting step waits for (an approval, an event) and its answer, events kept
 * for a wait that begins just after them, and the run's view of a waiting step. A workflow
 * step's `wait: false` becomes `detach: true`, since `wait` now names the wait step.
 */
export class WorkflowApprovals1795783000000 implements MigrationInterface {
  name = 'WorkflowApprovals1795783000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "workflow_run_waits" ("run_id" uuid NOT NULL, "step_id" character varying(64) NOT NULL, "organization_id" uuid NOT NULL, "workflow_id" uuid NOT NULL, "kind" character varying(16) NOT NULL, "event_name" character varying(200), "event_key" character varying(500), "schema" jsonb, "approvers" jsonb, "self_approval" boolean NOT NULL DEFAULT true, "status" character varying(16) NOT NULL, "answer" jsonb, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "timeout_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_workflow_run_waits" PRIMARY KEY ("run_id", "step_id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "workflow_run_waits_approval_idx" ON "workflow_run_waits" ("organization_id", "created_at", "run_id", "step_id") WHERE status = 'pending' AND kind = 'approval'`,
    );
    await queryRunner.query(
      `CREATE INDEX "workflow_run_waits_event_idx" ON "workflow_run_waits" ("organization_id", "event_name", "event_key") WHERE status = 'pending' AND kind = 'event'`,
    );
    await queryRunner.query(
      `ALTER TABLE "workflow_run_waits" ADD CONSTRAINT "FK_workflow_run_waits_run" FOREIGN KEY ("run_id") REFERENCES "workflow_runs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `CREATE TABLE "workflow_events" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "name" character varying(200) NOT NULL, "key" character varying(500) NOT NULL, "data" jsonb, "by" jsonb NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_workflow_events" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "workflow_events_expires_idx" ON "workflow_events" ("expires_at")`);
    await queryRunner.query(
      `CREATE INDEX "workflow_events_match_idx" ON "workflow_events" ("organization_id", "name", "key", "expires_at")`,
    );
    await queryRunner.query(
      `ALTER TABLE "workflow_events" ADD CONSTRAINT "FK_workflow_events_organization" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" ADD "waiting_for" jsonb`);
    await queryRunner.query(rewriteSteps(DETACH, `s ? 'workflow' AND s ? 'wait'`));
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(rewriteSteps(UNDETACH, `s ? 'workflow' AND s ? 'detach'`));
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" DROP COLUMN "waiting_for"`);
    await queryRunner.query(`DROP TABLE "workflow_events"`);
    await queryRunner.query(`DROP TABLE "workflow_run_waits"`);
  }
}
