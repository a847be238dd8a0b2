import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { InjectThrottlerStorage, ThrottlerStorage } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { Counter } from 'prom-client';
import { AppConfig } from '../../config/app-config';
import { Principal } from '../../shared/auth/principal';
import { DomainError } from '../../shared/errors/domain-error';
import { Metrics } from '../../shared/metrics/metrics';
import { SubscriptionService } from '../organizations/application/subscription.service';

/**
 * Global, after the JWT and roles guards: every authenticated request counts against its
 * organization's budget for the window (every user and token of an organization share it;
 * two organizations behind one IP never do), at the limit of the organization's current
 * tier. Writes the IETF draft `RateLimit-Policy` / `RateLimit` headers and the older
 * `X-RateLimit-*` ones on every authenticated response; over the limit, 429 with `Retry-After`.
 * Unauthenticated routes keep their own per-IP limits (login).
 */
@Injectable()
export class TierThrottlerGuard implements CanActivate {
  /** Labelled by organization id: bounded by the organizations of one installation. */
  private readonly refusals: Counter<'organization'>;

  constructor(
    @InjectThrottlerStorage() private readonly storage: ThrottlerStorage,
    private readonly subscriptions: SubscriptionService,
    private readonly config: AppConfig,
    metrics: Metrics,
  ) {
    this.refusals = new Counter({
      name: 'rate_limit_refusals_total',
      help: "Requests refused with 429 because the organization's tier rate limit was reached, by organization id",
      labelNames: ['organization'],
      registers: [metrics.registry],
    });
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const principal = http.getRequest<Request & { principal?: Principal }>().principal;
    if (!principal || !this.config.rateLimitEnabled) return true;
    const { tier, limit, windowSeconds } = await this.subscriptions.rateLimit(principal.organizationId);
    const ttl = windowSeconds * 1000;
    const record = await this.storage.increment(`org:${principal.organizationId}`, ttl, limit, ttl, 'tier');
    const reset = Math.max(1, record.isBlocked ? record.timeToBlockExpire : record.timeToExpire);
    const remaining = Math.max(0, limit - record.totalHits);
    http.getResponse<Response>().set({
      'RateLimit-Policy': `"${tier}";q=${limit};w=${windowSeconds}`,
      RateLimit: `"${tier}";r=${remaining};t=${reset}`,
      'X-RateLimit-Limit': String(limit),
      'X-RateLimit-Remaining': String(remaining),
      'X-RateLimit-Reset': String(reset),
    });
    if (record.totalHits > limit) {
      this.refusals.inc({ organization: principal.organizationId });
      throw new DomainError(
        'RATE_LIMIT_EXCEEDED',
        `The ${tier} tier allows ${limit} requests per ${windowSeconds} s for the organization; retry in ${reset} s`,
        undefined,
        {
          'Retry-After': String(reset),
        },
      );
    }
    return true;
  }
}
