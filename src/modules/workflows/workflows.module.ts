import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { PluginsModule } from '../plugins/plugins.module';
import { WorkflowsController } from './api/workflows.controller';
import { StepRules } from './application/step-rules';
import { WorkflowsService } from './application/workflows.service';
import { WorkflowRepository } from './domain/workflow.repository';
import { TypeOrmWorkflowRepository } from './infrastructure/typeorm-workflow.repository';

/**
 * Workflow definitions and their versions. The runs module runs them (and hands over the step
 * kinds definitions are checked against); the triggers module starts them on schedules and hooks.
 */
@Module({
  imports: [AgentsModule, PluginsModule],
  controllers: [WorkflowsController],
  providers: [WorkflowsService, StepRules, { provide: WorkflowRepository, useClass: TypeOrmWorkflowRepository }],
  exports: [WorkflowsService, StepRules, WorkflowRepository],
})
export class WorkflowsModule {}
