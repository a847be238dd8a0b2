export const ROLES = ['admin', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** Who is calling: set on the request by the JWT guard, read by controllers. */
export interface Principal {
  userId: string;
  organizationId: string;
  role: Role;
  isOperator: boolean;
  email: string;
}
