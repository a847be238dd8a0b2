import { Injectable } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/** One registry per app instance (tests boot several in one process). */
@Injectable()
export class Metrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route and status',
    labelNames: ['method', 'route', 'status'],
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Labels by route pattern (`/api/users/:id`), never by raw path, to bound cardinality. */
  middleware(): RequestHandler {
    return (req: Request, res: Response, next: NextFunction) => {
      const end = process.hrtime.bigint();
      res.on('finish', () => {
        // A string pattern, or a RegExp (an Express router's own route, e.g. the console's pages).
        const routePath: unknown = (req.route as { path?: unknown } | undefined)?.path;
        // Nest answers unknown routes through a catch-all `{/*splat}` route; a mounted router's
        // catch-all (the console's) counts under its mount point.
        const route =
          typeof routePath === 'string' && !routePath.includes('*')
            ? `${req.baseUrl}${routePath}`
            : req.baseUrl
              ? `${req.baseUrl}/*`
              : 'unmatched';
        const labels = { method: req.method, route, status: String(res.statusCode) };
        this.requests.inc(labels);
        this.latency.observe(labels, Number(process.hrtime.bigint() - end) / 1e9);
      });
      next();
    };
  }
}
