import { MigrationInterface, QueryRunner } from 'typeorm';

/** The journal of tool-calling agent executions: each model turn and tool call, committed as it ends. */
export class AgentTranscripts1795790000000 implements MigrationInterface {
  name = 'AgentTranscripts1795790000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "agent_execution_steps" ("execution_id" uuid NOT NULL, "turn" integer NOT NULL, "position" smallint NOT NULL, "organization_id" uuid NOT NULL, "call_id" character varying(256), "name" character varying(256) NOT NULL, "body" json NOT NULL, "result" json, "started_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "finished_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_agent_execution_steps" PRIMARY KEY ("execution_id", "turn", "position"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "agent_execution_steps" ADD CONSTRAINT "FK_agent_execution_steps_execution" FOREIGN KEY ("execution_id") REFERENCES "agent_executions"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "agent_execution_steps"`);
  }
}
