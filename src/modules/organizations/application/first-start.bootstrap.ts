import { randomBytes } from 'node:crypto';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { AppConfig } from '../../../config/app-config';
import { DomainError } from '../../../shared/errors/domain-error';
import { LicensingService } from '../../licensing/application/licensing.service';
import { OrganizationsService } from './organizations.service';

/**
 * On an empty database: organization `default` (at the licensed tier, starter without a
 * license; LICENSE_KEY is installed before this runs) and its admin (an instance operator). When no
 * ADMIN_PASSWORD is given one is generated and printed once; an ADMIN_PASSWORD set on a database
 * that has its admin already is ignored, with a warning at each boot. Two instances starting together
 * are safe: the second one's insert hits the unique slug and it leaves the first one's work.
 */
@Injectable()
export class FirstStartBootstrap implements OnApplicationBootstrap {
  private readonly logger = new Logger('FirstStart');

  constructor(
    private readonly organizations: OrganizationsService,
    private readonly config: AppConfig,
    private readonly cls: ClsService,
    private readonly licensing: LicensingService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.cls.run(async () => {
      // First the configured license: it raises a single organization, or sets the first one's tier.
      await this.licensing.applyConfiguredKey();
      const { adminEmail, adminPassword } = this.config.bootstrap;
      if (await this.organizations.hasAny()) {
        if (adminPassword) this.ignoredAdminPassword(adminEmail);
        return;
      }
      const password = adminPassword ?? randomBytes(18).toString('base64url');
      try {
        await this.organizations.create({
          slug: 'default',
          name: 'Default',
          // The license's tier, not a trial's: organizations keep it when the trial ends.
          tier: (await this.licensing.state()).licensedTier,
          admin: { email: adminEmail, password, isOperator: true },
        });
      } catch (error) {
        if (error instanceof DomainError && error.code === 'ORGANIZATION_SLUG_TAKEN') {
          if (adminPassword) this.ignoredAdminPassword(adminEmail);
          return;
        }
        throw error;
      }
      this.logger.log(`Created organization 'default' with admin ${adminEmail}`);
      if (!adminPassword) {
        // Printed once, on the first start only: the operator's only way to learn it.
        this.logger.warn(
          `Generated password for ${adminEmail}: ${password} (set ADMIN_PASSWORD to choose one; change it after signing in)`,
        );
      }
    });
  }

  /** ADMIN_PASSWORD counts on an empty database only: said at every boot that ignores it. */
  private ignoredAdminPassword(adminEmail: string): void {
    this.logger.warn(
      `ADMIN_PASSWORD is ignored: the admin ${adminEmail} already exists. To change its password run ` +
        `\`npm run cli -- user:reset-password ${adminEmail}\`, or PATCH /api/users/:id as a signed-in admin`,
    );
  }
}
