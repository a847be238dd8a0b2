import { Module } from '@nestjs/common';
import { PluginsModule } from '../plugins/plugins.module';
import { AgentsController } from './api/agents.controller';
import { ExecutionsController } from './api/executions.controller';
import { AgentExecutor } from './application/agent-executor';
import { AgentDeltas } from './application/agent-deltas';
import { AgentRunner } from './application/agent-runner';
import { AgentSteps } from './application/agent-steps';
import { ActionTools } from './application/tools/action.tool';
import { AgentToolSource } from './application/tools/agent.tool';
import { AgentTools } from './application/tools/agent-tools';
import { AgentsService, AgentUsage } from './application/agents.service';
import { ExecutionJobs } from './application/execution-jobs';
import { ExecutionsService } from './application/executions.service';
import { AgentRepository } from './domain/agent.repository';
import { ExecutionRepository } from './domain/execution.repository';
import { TypeOrmAgentRepository } from './infrastructure/typeorm-agent.repository';
import { TypeOrmExecutionRepository } from './infrastructure/typeorm-execution.repository';
import { TranscriptRepository } from './domain/transcript.repository';
import { TypeOrmTranscriptRepository } from './infrastructure/typeorm-transcript.repository';

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
    AgentRunner,
    AgentTools,
    AgentDeltas,
    ActionTools,
    AgentToolSource,
    { provide: AgentRepository, useClass: TypeOrmAgentRepository },
    { provide: TranscriptRepository, useClass: TypeOrmTranscriptRepository },
    { provide: ExecutionRepository, useClass: TypeOrmExecutionRepository },
  ],
  exports: [AgentsService, AgentUsage, ExecutionsService, AgentSteps, AgentTools],
})
export class AgentsModule {}
