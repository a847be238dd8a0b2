import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiExtension, ApiSecurity } from '@nestjs/swagger';
import { Principal, Role, ROLES } from './principal';
import { Scope } from './scopes';

export const PUBLIC_KEY = 'access:public';
/** The OpenAPI security scheme of API keys (beside `bearer`, the access token). */
export const API_KEY_SCHEME = 'api-key';
export const ROLES_KEY = 'access:roles';
export const OPERATOR_KEY = 'access:operator';
export const OPERATORS_TOO_KEY = 'access:operators-too';
export const SCOPE_KEY = 'access:scope';
export const SESSION_ONLY_KEY = 'access:session-only';
export const ANY_SCOPE_KEY = 'access:any-scope';

/** No token needed (login, refresh, SAML endpoints, ops). */
export const Public = () => SetMetadata(PUBLIC_KEY, true);

/** Only these organization roles may call the route. */
export const Roles = (...roles: Role[]) => SetMetadata(ROLES_KEY, roles);

/** Any authenticated user of the organization (reads). */
export const AnyRole = () => Roles(...ROLES);

/** Instance operators only (a user flag, independent of the organization role). */
export const OperatorOnly = () => SetMetadata(OPERATOR_KEY, true);

/** These roles, and instance operators whatever their role. */
export const RolesOrOperator = (...roles: Role[]) => applyDecorators(Roles(...roles), SetMetadata(OPERATORS_TOO_KEY, true));

/**
 * The API key scope the route needs (a key with scopes must hold it; sessions need none). The
 * OpenAPI document lists API keys as a way in, and names the scope.
 */
export const RequiresScope = (scope: Scope) =>
  applyDecorators(SetMetadata(SCOPE_KEY, scope), ApiSecurity(API_KEY_SCHEME), ApiExtension('x-api-key-scope', scope));

/**
 * A route that serves several kinds of resource in one (`/api/mcp`): a key with scopes must hold
 * at least one of these; the service narrows what it does to the scopes the key holds.
 */
export const RequiresAnyScope = (...scopes: Scope[]) =>
  applyDecorators(SetMetadata(ANY_SCOPE_KEY, scopes), ApiSecurity(API_KEY_SCHEME), ApiExtension('x-api-key-scope', scopes.join(' | ')));

/** Only a signed-in person (a session), never an API key: credentials, passwords, operator rights. */
export const SessionOnly = () => SetMetadata(SESSION_ONLY_KEY, true);

export const CurrentPrincipal = createParamDecorator((_data: unknown, ctx: ExecutionContext): Principal => {
  const request = ctx.switchToHttp().getRequest<{ principal?: Principal }>();
  if (!request.principal) throw new Error('CurrentPrincipal used on a route without authentication');
  return request.principal;
});
