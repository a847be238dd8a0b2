import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckResult, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { DataSource } from 'typeorm';
import { Public } from '../../shared/auth/access.decorators';
import { ApiPublicErrors } from '../../shared/http/api-errors.decorator';
import { JobQueue } from '../../queue/job-queue';
import { Metrics } from './metrics';

const READY_TIMEOUT_MS = 2000;

@ApiTags('operations')
@Public()
@Controller()
export class OperationsController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly dataSource: DataSource,
    private readonly metrics: Metrics,
    private readonly queue: JobQueue,
  ) {}

  @Get('health/live')
  @ApiOkResponse({ description: 'The process is up' })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('health/ready')
  @HealthCheck()
  @ApiOkResponse({ description: 'The database answers and the job queue is running' })
  @ApiPublicErrors()
  ready(): Promise<HealthCheckResult> {
    return this.health.check([() => this.database(), () => this.jobQueue()]);
  }

  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  @ApiExcludeEndpoint()
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }

  private jobQueue() {
    const indicator = this.indicators.check('queue');
    return this.queue.running ? indicator.up() : indicator.down({ message: 'job queue not running' });
  }

  private async database() {
    const indicator = this.indicators.check('database');
    try {
      await Promise.race([
        this.dataSource.query('SELECT 1'),
        new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), READY_TIMEOUT_MS).unref()),
      ]);
      return indicator.up();
    } catch {
      return indicator.down({ message: 'database unreachable' });
    }
  }
}
