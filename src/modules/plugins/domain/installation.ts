import { randomUUID } from 'node:crypto';
import { canonicalJson } from '../../../shared/json/canonical-json';

export interface InstallationProps {
  id: string;
  organizationId: string;
  slug: string;
  version: string;
  /** The whole config, secrets included, in clear: only ever held in memory. */
  config: Record<string, unknown>;
  installedBy: string;
  createdAt: Date;
  updatedAt: Date;
}

/** A plugin installed for one organization, with its configuration. */
export class Installation {
  private constructor(private props: InstallationProps) {}

  static create(input: {
    organizationId: string;
    slug: string;
    version: string;
    config: Record<string, unknown>;
    installedBy: string;
  }): Installation {
    const now = new Date();
    return new Installation({ id: randomUUID(), ...input, createdAt: now, updatedAt: now });
  }

  static rehydrate(props: InstallationProps): Installation {
    return new Installation({ ...props });
  }

  get id() {
    return this.props.id;
  }
  get organizationId() {
    return this.props.organizationId;
  }
  get slug() {
    return this.props.slug;
  }
  get version() {
    return this.props.version;
  }
  get config() {
    return this.props.config;
  }
  get installedBy() {
    return this.props.installedBy;
  }
  get createdAt() {
    return this.props.createdAt;
  }
  get updatedAt() {
    return this.props.updatedAt;
  }

  /** Same config, key order aside. */
  /** Whether `config` is this one but for `secretFields`: secrets are never compared, so no answer depends on them. */
  hasConfig(config: Record<string, unknown>, secretFields: string[]): boolean {
    const withoutSecrets = (c: Record<string, unknown>) => Object.fromEntries(Object.entries(c).filter(([k]) => !secretFields.includes(k)));
    return canonicalJson(withoutSecrets(this.props.config)) === canonicalJson(withoutSecrets(config));
  }

  reconfigure(config: Record<string, unknown>): void {
    this.props = { ...this.props, config, updatedAt: new Date() };
  }

  toProps(): InstallationProps {
    return { ...this.props };
  }
}
