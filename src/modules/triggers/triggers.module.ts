import { Module } from '@nestjs/common';
import { RunsModule } from '../runs/runs.module';
import { WorkflowsModule } from '../workflows/workflows.module';
import { HooksController } from './api/hooks.controller';
import { SchedulesController } from './api/schedules.controller';
import { TriggersController } from './api/triggers.controller';
import { Hooks } from './application/hooks';
import { Scheduler } from './application/scheduler';
import { SchedulesService } from './application/schedules.service';
import { TriggersService } from './application/triggers.service';
import { ScheduleRepository } from './domain/schedule.repository';
import { TriggerEventRepository, TriggerRepository } from './domain/trigger.repository';
import { TypeOrmScheduleRepository } from './infrastructure/typeorm-schedule.repository';
import { TypeOrmTriggerEventRepository, TypeOrmTriggerRepository } from './infrastructure/typeorm-trigger.repository';

/** What starts runs besides the API: cron schedules and inbound webhook triggers. */
@Module({
  imports: [WorkflowsModule, RunsModule],
  controllers: [SchedulesController, TriggersController, HooksController],
  providers: [
    SchedulesService,
    Scheduler,
    TriggersService,
    Hooks,
    { provide: TriggerRepository, useClass: TypeOrmTriggerRepository },
    { provide: TriggerEventRepository, useClass: TypeOrmTriggerEventRepository },
    { provide: ScheduleRepository, useClass: TypeOrmScheduleRepository },
  ],
})
export class TriggersModule {}
