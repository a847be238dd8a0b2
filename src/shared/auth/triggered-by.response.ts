import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** What started an execution or a run. */
export class TriggeredByResponse {
  @ApiProperty({ enum: ['user', 'api_key', 'schedule', 'webhook', 'workflow_run', 'agent_execution', 'mcp'] }) type!: string;
  @ApiProperty({
    format: 'uuid',
    description:
      'The user, the API key, the schedule, the webhook trigger, the workflow run or the agent execution; for `mcp`, the user or the service account that called',
  })
  id!: string;
  @ApiPropertyOptional({ format: 'uuid', description: 'The service account that holds the key (type api_key)' })
  serviceAccountId?: string;
  @ApiPropertyOptional({ format: 'uuid', description: 'The API key an MCP client called with (type mcp)' })
  keyId?: string;
  @ApiPropertyOptional({ format: 'date-time', description: 'The occurrence of the schedule that started it (type schedule)' })
  scheduledFor?: string;
  @ApiPropertyOptional({ format: 'uuid', description: 'The event of the webhook trigger that started it (type webhook)' })
  eventId?: string;
  @ApiPropertyOptional({
    format: 'uuid',
    description:
      "The user behind it where that is not `id`: a personal key's owner, whoever pressed trigger now or replayed the event, " +
      'the person behind the run or execution that started it. None for a service account, an outside request or a schedule',
  })
  person?: string;
}
