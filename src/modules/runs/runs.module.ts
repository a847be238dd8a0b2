import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { PluginsModule } from '../plugins/plugins.module';
import { WorkflowsModule } from '../workflows/workflows.module';
import { RunsController } from './api/runs.controller';
import { WorkflowRunsController } from './api/workflow-runs.controller';
import { RunEngine } from './application/run-engine';
import { RunConcurrency } from './application/run-concurrency';
import { RunJobs } from './application/run-jobs';
import { RunsService } from './application/runs.service';
import { STEP_KIND_PROVIDERS } from './application/steps/step-kinds';
import { ChildRuns } from './application/steps/workflow.step';
import { RunRepository } from './domain/run.repository';
import { TypeOrmRunRepository } from './infrastructure/typeorm-run.repository';
import { TypeOrmWaitRepository } from './infrastructure/typeorm-wait.repository';
import { WaitRepository } from './domain/wait.repository';
import { WaitsService } from './application/waits.service';
import { WaitsController } from './api/waits.controller';
import { WorkflowToolSource } from './application/workflow.tool';

/** Workflow runs: the engine, its step kinds, the run records and their routes. */
@Module({
  imports: [AgentsModule, PluginsModule, WorkflowsModule],
  controllers: [WorkflowRunsController, RunsController, WaitsController],
  providers: [
    RunsService,
    RunEngine,
    RunJobs,
    WaitsService,
    RunConcurrency,
    WorkflowToolSource,
    ...STEP_KIND_PROVIDERS,
    { provide: ChildRuns, useExisting: RunsService },
    { provide: RunRepository, useClass: TypeOrmRunRepository },
    { provide: WaitRepository, useClass: TypeOrmWaitRepository },
  ],
  exports: [RunsService, RunRepository],
})
export class RunsModule {}
