import { RefreshTokenRow } from '../modules/auth/infrastructure/refresh-token.orm-entity';
import { InstallationRow } from '../modules/plugins/infrastructure/installation.orm-entity';
import { OrganizationRow } from '../modules/organizations/infrastructure/organization.orm-entity';
import { UserRow } from '../modules/users/infrastructure/user.orm-entity';

/** Every ORM entity of the service; the migrations are generated from this list. */
export const ENTITIES = [OrganizationRow, UserRow, RefreshTokenRow, InstallationRow];
