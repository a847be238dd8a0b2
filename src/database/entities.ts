import { AgentRow } from '../modules/agents/infrastructure/agent.orm-entity';
import { ExecutionRow } from '../modules/agents/infrastructure/execution.orm-entity';
import { LicenseRow } from '../modules/licensing/infrastructure/license.orm-entity';
import { SamlLoginCodeRow, SamlRequestRow, SamlSettingsRow } from '../modules/auth/saml/saml.orm-entities';
import { RefreshTokenRow } from '../modules/auth/infrastructure/refresh-token.orm-entity';
import { InstallationRow } from '../modules/plugins/infrastructure/installation.orm-entity';
import { OrganizationRow } from '../modules/organizations/infrastructure/organization.orm-entity';
import { RunRow, RunStepRow, WorkflowRow, WorkflowVersionRow } from '../modules/workflows/infrastructure/workflow.orm-entities';
import { UserRow } from '../modules/users/infrastructure/user.orm-entity';
import { IdempotencyKeyRow } from '../shared/idempotency/idempotency-key.orm-entity';

/** Every ORM entity of the service; the migrations are generated from this list. */
export const ENTITIES = [
  OrganizationRow,
  UserRow,
  RefreshTokenRow,
  InstallationRow,
  AgentRow,
  ExecutionRow,
  IdempotencyKeyRow,
  WorkflowRow,
  WorkflowVersionRow,
  RunRow,
  RunStepRow,
  LicenseRow,
  SamlSettingsRow,
  SamlRequestRow,
  SamlLoginCodeRow,
];
