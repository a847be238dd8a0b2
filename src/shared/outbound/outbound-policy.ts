import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { parseAllowList } from './address-policy';
import type { AllowList } from './outbound-http.types';

/**
 * What the SSRF guard lets through in this process: OUTBOUND_ALLOWLIST, and loopback and private
 * addresses while the module that knows the trial says so (TRIAL=true, for its 30 days).
 */
@Injectable()
export class OutboundPolicy {
  readonly allowList: AllowList;
  private internal: () => boolean = () => false;

  constructor(config: AppConfig) {
    this.allowList = { ...parseAllowList(config.outboundAllowList), internalAllowed: () => this.internal() };
  }

  /** Called once at boot: loopback and private targets are allowed while `predicate` answers true. */
  allowInternalWhile(predicate: () => boolean): void {
    this.internal = predicate;
  }
}
