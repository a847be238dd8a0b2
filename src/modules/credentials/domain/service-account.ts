import { randomUUID } from 'node:crypto';
import { Role } from '../../../shared/auth/principal';

export interface ServiceAccountProps {
  id: string;
  organizationId: string;
  name: string;
  role: Role;
  disabled: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * A non-person principal of an organization that holds API keys: it survives people leaving,
 * takes no seat, cannot sign in and is never an operator.
 */
export class ServiceAccount {
  private constructor(private props: ServiceAccountProps) {}

  static create(input: { organizationId: string; name: string; role: Role }): ServiceAccount {
    const now = new Date();
    return new ServiceAccount({ id: randomUUID(), ...input, disabled: false, createdAt: now, updatedAt: now });
  }

  static rehydrate(props: ServiceAccountProps): ServiceAccount {
    return new ServiceAccount({ ...props });
  }

  get id() {
    return this.props.id;
  }
  get organizationId() {
    return this.props.organizationId;
  }
  get role() {
    return this.props.role;
  }
  get name() {
    return this.props.name;
  }
  get disabled() {
    return this.props.disabled;
  }

  change(patch: { name?: string; role?: Role; disabled?: boolean }): void {
    const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
    this.props = { ...this.props, ...defined, updatedAt: new Date() };
  }

  toProps(): ServiceAccountProps {
    return { ...this.props };
  }
}
