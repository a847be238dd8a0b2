import { MigrationInterface, QueryRunner } from 'typeorm';

/** An agent's `mcp` field: whether `/api/mcp` serves it as a tool (null: not served). */
export class AgentMcpExposure1795795000000 implements MigrationInterface {
  name = 'AgentMcpExposure1795795000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "agents" ADD "mcp" jsonb`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "agents" DROP COLUMN "mcp"`);
  }
}
