import { Injectable } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { Metrics } from '../../../shared/metrics/metrics';
import { LicensingService } from './licensing.service';

/**
 * `license_expires_at_seconds{tier}`: when the installed license expires (Unix seconds), read
 * at scrape time from the per-process copy. No sample without a license or when it cannot be
 * read, so an alert on it speaks only of a license that exists.
 */
@Injectable()
export class LicenseMetrics {
  constructor(licensing: LicensingService, metrics: Metrics) {
    new Gauge({
      name: 'license_expires_at_seconds',
      help: 'When the installed license expires, as Unix time in seconds, by its tier (no sample without a license)',
      labelNames: ['tier'],
      registers: [metrics.registry],
      async collect() {
        this.reset();
        const license = (await licensing.state().catch(() => null))?.license;
        if (license) this.set({ tier: license.claims.tier }, license.claims.exp);
      },
    });
  }
}
