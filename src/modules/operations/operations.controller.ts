import { createHash, timingSafeEqual } from 'node:crypto';
import { Controller, Get, Headers, Redirect, Res } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckResult, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { DataSource } from 'typeorm';
import { Public } from '../../shared/auth/access.decorators';
import { ApiPublicErrors } from '../../shared/http/api-errors.decorator';
import { JobQueue } from '../../queue/job-queue';
import { AppConfig } from '../../config/app-config';
import { DomainError } from '../../shared/errors/domain-error';
import type { Response } from 'express';
import { Metrics } from '../../shared/metrics/metrics';
import { ShutdownDrain } from './shutdown-drain';

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
    private readonly config: AppConfig,
    private readonly drain: ShutdownDrain,
  ) {}

  /** A browser opening the service's address lands on the API docs. */
  @Get()
  @Redirect('/api/docs', 302)
  @ApiExcludeEndpoint()
  home(): void {}

  @Get('health/live')
  @ApiOkResponse({ description: 'The process is up' })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('health/ready')
  @HealthCheck()
  @ApiOkResponse({ description: 'The database answers, the job queue is running and the process is not shutting down' })
  @ApiPublicErrors()
  ready(): Promise<HealthCheckResult> {
    // Draining: load balancers must send elsewhere, whatever the database says.
    if (this.drain.draining) throw new DomainError('SERVICE_UNAVAILABLE', 'Shutting down: send new requests to another replica');
    return this.health.check([() => this.database(), () => this.jobQueue()]);
  }

  /** Off (404) unless METRICS_TOKEN is set; then only with `Authorization: Bearer <METRICS_TOKEN>`. */
  @Get('metrics')
  @ApiExcludeEndpoint()
  scrape(@Headers('authorization') authorization: string | undefined, @Res({ passthrough: true }) res: Response): Promise<string> {
    const token = this.config.metricsToken;
    if (!token) throw new DomainError('NOT_FOUND', 'No route GET /metrics (set METRICS_TOKEN to serve it)');
    if (!sameSecret(authorization ?? '', `Bearer ${token}`)) throw new DomainError('UNAUTHORIZED', 'The metrics token is missing or wrong');
    // Set here, not by @Header: an error must keep its JSON content type.
    res.setHeader('Content-Type', 'text/plain; version=0.0.4; charset=utf-8');
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

/** Compares in constant time (over digests, so lengths do not show either). */
function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
