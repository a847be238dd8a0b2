import { Injectable, Logger } from '@nestjs/common';
import { Counter } from 'prom-client';
import { Metrics } from '../../shared/metrics/metrics';

/**
 * What the process does with a failure nothing caught. A promise that rejects with no handler
 * is a bug, but one request's or one job's, not the process's: it is logged and counted in
 * `platform_unhandled_rejections_total`, and the process goes on serving. An exception thrown
 * with nothing to catch it may have left any state half-changed: it is logged and the process
 * exits 1, so that it is restarted clean.
 */
@Injectable()
export class ProcessFailures {
  private readonly logger = new Logger('Process');
  private readonly rejections: Counter;

  constructor(metrics: Metrics) {
    this.rejections = new Counter({
      name: 'platform_unhandled_rejections_total',
      help: 'Promises that rejected with no handler (logged; the process went on)',
      registers: [metrics.registry],
    });
  }

  /** Installs the handlers on the process (main.ts, once booted: a failed boot still ends it). */
  watch(): void {
    process.on('unhandledRejection', (reason) => this.rejected(reason));
    process.on('uncaughtException', (error, origin) => this.thrown(error, origin));
  }

  rejected(reason: unknown): void {
    this.rejections.inc();
    this.logger.error({ msg: 'A promise rejected with no handler; the process goes on', err: reason });
  }

  thrown(error: Error, origin: NodeJS.UncaughtExceptionOrigin): void {
    this.logger.fatal({ msg: 'An exception nothing caught; the process exits', origin, err: error });
    process.exit(1);
  }
}
