import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { AppConfig } from '../../config/app-config';

/**
 * The first step of an API process's shutdown, so that a rolling restart behind a load balancer
 * fails no request: from `drain()` on, /health/ready answers 503 and the balancer stops sending
 * here, while every request that still arrives is served as usual. Each response from then on
 * closes its connection, so no keep-alive connection is left to close under a request.
 */
@Injectable()
export class ShutdownDrain {
  private started = false;

  constructor(private readonly config: AppConfig) {}

  get draining(): boolean {
    return this.started;
  }

  /** Turns readiness off, then waits SHUTDOWN_DRAIN_MS. A worker process serves no API: nothing to drain. */
  async drain(): Promise<void> {
    if (!this.config.runsApi) return;
    this.started = true;
    await sleep(this.config.http.shutdownDrainMs);
  }

  middleware(): (req: Request, res: Response, next: NextFunction) => void {
    return (_req, res, next) => {
      if (this.started) res.setHeader('Connection', 'close');
      next();
    };
  }
}
