import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentPrincipal, RequiresScope, Roles } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { UuidParam } from '../../../shared/http/uuid-param.pipe';
import { PageQuery } from '../../../shared/pagination/page-query.dto';
import { UsersService } from '../application/users.service';
import { CreateUserRequest, UpdateUserRequest, UserPageResponse } from './user.dto';
import { UserResponse } from '../user.response';

@ApiTags('users')
@ApiBearerAuth()
@Roles('admin')
@Controller('api/users')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Get()
  @RequiresScope('users:read')
  @ApiOkResponse({ type: UserPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN')
  async list(@CurrentPrincipal() caller: Principal, @Query() query: PageQuery): Promise<UserPageResponse> {
    const page = await this.users.list(caller, query);
    return { data: page.data.map(UserResponse.from), nextCursor: page.nextCursor };
  }

  @Post()
  @RequiresScope('users:write')
  @ApiOperation({
    summary: 'Add a user with a password to the organization',
    description: 'Needs a signed-in user: the body sets a password, which an API key may never do (403 FORBIDDEN).',
  })
  @ApiCreatedResponse({ type: UserResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'EMAIL_TAKEN')
  async create(
    @CurrentPrincipal() caller: Principal,
    @Body() body: CreateUserRequest,
    @Res({ passthrough: true }) res: Response,
  ): Promise<UserResponse> {
    const user = await this.users.add(caller, body);
    res.location(`/api/users/${user.id}`);
    return UserResponse.from(user);
  }

  @Get(':id')
  @RequiresScope('users:read')
  @ApiOkResponse({ type: UserResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'USER_NOT_FOUND')
  async get(@CurrentPrincipal() caller: Principal, @Param('id', UuidParam) id: string): Promise<UserResponse> {
    return UserResponse.from(await this.users.get(caller, id));
  }

  @Patch(':id')
  @RequiresScope('users:write')
  @ApiOperation({
    summary: "Change a user's role, disable or enable the user, or set a new password",
    description:
      'Setting `password` and changing `role` to another role need a signed-in user: with an API key they are 403 ' +
      'FORBIDDEN. A key with `users:write` may disable or enable a user.',
  })
  @ApiOkResponse({ type: UserResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'USER_NOT_FOUND')
  async update(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Body() body: UpdateUserRequest,
  ): Promise<UserResponse> {
    return UserResponse.from(await this.users.update(caller, id, body));
  }

  @Delete(':id')
  @RequiresScope('users:write')
  @HttpCode(204)
  @ApiNoContentResponse()
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'USER_NOT_FOUND')
  async delete(@CurrentPrincipal() caller: Principal, @Param('id', UuidParam) id: string): Promise<void> {
    await this.users.delete(caller, id);
  }
}
