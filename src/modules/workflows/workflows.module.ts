import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { PluginsModule } from '../plugins/plugins.module';
import { WorkflowsController } from './api/workflows.controller';
import { RunEngine } from './application/run-engine';
import { RunJobs } from './application/run-jobs';
import { RunsService } from './application/runs.service';
import { WorkflowsService } from './application/workflows.service';
import { RunRepository, WorkflowRepository } from './domain/workflow.repository';
import { TypeOrmRunRepository } from './infrastructure/typeorm-run.repository';
import { TypeOrmWorkflowRepository } from './infrastructure/typeorm-workflow.repository';

@Module({
  imports: [AgentsModule, PluginsModule],
  controllers: [WorkflowsController],
  providers: [
    WorkflowsService,
    RunsService,
    RunEngine,
    RunJobs,
    { provide: WorkflowRepository, useClass: TypeOrmWorkflowRepository },
    { provide: RunRepository, useClass: TypeOrmRunRepository },
  ],
})
export class WorkflowsModule {}
