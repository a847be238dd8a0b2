import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { PluginsModule } from '../plugins/plugins.module';
import { SchedulesController } from './api/schedules.controller';
import { WorkflowsController } from './api/workflows.controller';
import { RunEngine } from './application/run-engine';
import { RunJobs } from './application/run-jobs';
import { RunsService } from './application/runs.service';
import { Scheduler } from './application/scheduler';
import { SchedulesService } from './application/schedules.service';
import { WorkflowsService } from './application/workflows.service';
import { ScheduleRepository } from './domain/schedule.repository';
import { RunRepository, WorkflowRepository } from './domain/workflow.repository';
import { TypeOrmRunRepository } from './infrastructure/typeorm-run.repository';
import { TypeOrmScheduleRepository } from './infrastructure/typeorm-schedule.repository';
import { TypeOrmWorkflowRepository } from './infrastructure/typeorm-workflow.repository';

@Module({
  imports: [AgentsModule, PluginsModule],
  controllers: [WorkflowsController, SchedulesController],
  providers: [
    WorkflowsService,
    RunsService,
    RunEngine,
    RunJobs,
    SchedulesService,
    Scheduler,
    { provide: ScheduleRepository, useClass: TypeOrmScheduleRepository },
    { provide: WorkflowRepository, useClass: TypeOrmWorkflowRepository },
    { provide: RunRepository, useClass: TypeOrmRunRepository },
  ],
})
export class WorkflowsModule {}
