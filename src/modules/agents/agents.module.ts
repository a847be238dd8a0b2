import { Module } from '@nestjs/common';
import { PluginsModule } from '../plugins/plugins.module';
import { AgentsController } from './api/agents.controller';
import { ExecutionsController } from './api/executions.controller';
import { AgentExecutor } from './application/agent-executor';
import { AgentSteps } from './application/agent-steps';
import { AgentsService, AgentUsage } from './application/agents.service';
import { ExecutionJobs } from './application/execution-jobs';
import { ExecutionsService } from './application/executions.service';
import { AgentRepository } from './domain/agent.repository';
import { ExecutionRepository } from './domain/execution.repository';
import { TypeOrmAgentRepository } from './infrastructure/typeorm-agent.repository';
import { TypeOrmExecutionRepository } from './infrastructure/typeorm-execution.repository';

@Module({
  imports: [PluginsModule],
  controllers: [AgentsController, ExecutionsController],
  providers: [
    AgentsService,
    AgentUsage,
    ExecutionsService,
    AgentExecutor,
    ExecutionJobs,
    AgentSteps,
    { provide: AgentRepository, useClass: TypeOrmAgentRepository },
    { provide: ExecutionRepository, useClass: TypeOrmExecutionRepository },
  ],
  exports: [AgentsService, AgentUsage, ExecutionsService, AgentSteps],
})
export class AgentsModule {}
