import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { PluginsModule } from '../plugins/plugins.module';
import { HooksController } from './api/hooks.controller';
import { RunsController } from './api/runs.controller';
import { SchedulesController } from './api/schedules.controller';
import { TriggersController } from './api/triggers.controller';
import { WorkflowsController } from './api/workflows.controller';
import { RunEngine } from './application/run-engine';
import { STEP_KIND_PROVIDERS } from './application/steps/step-kinds';
import { ChildRuns } from './application/steps/workflow.step';
import { RunJobs } from './application/run-jobs';
import { RunsService } from './application/runs.service';
import { Scheduler } from './application/scheduler';
import { Hooks } from './application/hooks';
import { SchedulesService } from './application/schedules.service';
import { TriggersService } from './application/triggers.service';
import { WorkflowsService } from './application/workflows.service';
import { ScheduleRepository } from './domain/schedule.repository';
import { TriggerEventRepository, TriggerRepository } from './domain/trigger.repository';
import { RunRepository, WorkflowRepository } from './domain/workflow.repository';
import { TypeOrmRunRepository } from './infrastructure/typeorm-run.repository';
import { TypeOrmScheduleRepository } from './infrastructure/typeorm-schedule.repository';
import { TypeOrmTriggerEventRepository, TypeOrmTriggerRepository } from './infrastructure/typeorm-trigger.repository';
import { TypeOrmWorkflowRepository } from './infrastructure/typeorm-workflow.repository';

@Module({
  imports: [AgentsModule, PluginsModule],
  controllers: [WorkflowsController, RunsController, SchedulesController, TriggersController, HooksController],
  providers: [
    WorkflowsService,
    RunsService,
    RunEngine,
    ...STEP_KIND_PROVIDERS,
    { provide: ChildRuns, useExisting: RunsService },
    RunJobs,
    SchedulesService,
    Scheduler,
    TriggersService,
    Hooks,
    { provide: TriggerRepository, useClass: TypeOrmTriggerRepository },
    { provide: TriggerEventRepository, useClass: TypeOrmTriggerEventRepository },
    { provide: ScheduleRepository, useClass: TypeOrmScheduleRepository },
    { provide: WorkflowRepository, useClass: TypeOrmWorkflowRepository },
    { provide: RunRepository, useClass: TypeOrmRunRepository },
  ],
})
export class WorkflowsModule {}
