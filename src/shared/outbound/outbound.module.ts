import { Global, Module } from '@nestjs/common';
import { OutboundPolicy } from './outbound-policy';

/** One OutboundPolicy per process, for every outbound client (webhooks, plugins, SAML settings). */
@Global()
@Module({ providers: [OutboundPolicy], exports: [OutboundPolicy] })
export class OutboundModule {}
