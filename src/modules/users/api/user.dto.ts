import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsEmail, IsIn, IsString, MaxLength, MinLength } from 'class-validator';
import { Role, ROLES } from '../../../shared/auth/principal';
import { UserResponse } from '../user.response';
import { Optional } from '../../../shared/http/optional.decorator';

export class CreateUserRequest {
  @ApiProperty({ example: 'ada@example.com' })
  @IsEmail({ require_tld: false })
  @MaxLength(320)
  email!: string;

  @ApiProperty({
    minLength: 12,
    maxLength: 200,
    description: 'At least 12 characters. Only a signed-in user may set one: an API key is refused',
  })
  @IsString()
  @MinLength(12)
  @MaxLength(200)
  password!: string;

  @ApiProperty({ enum: ROLES })
  @IsIn(ROLES)
  role!: Role;
}

export class UpdateUserRequest {
  @ApiPropertyOptional({
    enum: ROLES,
    description: 'Only a signed-in user may change the role: an API key is refused unless it is the current one',
  })
  @Optional()
  @IsIn(ROLES)
  role?: Role;

  @ApiPropertyOptional({ description: "A disabled user cannot sign in and the user's tokens stop working at once" })
  @Optional()
  @IsBoolean()
  disabled?: boolean;

  @ApiPropertyOptional({ minLength: 12, maxLength: 200, description: 'Only a signed-in user may set a password: an API key is refused' })
  @Optional()
  @IsString()
  @MinLength(12)
  @MaxLength(200)
  password?: string;
}

export class UserPageResponse {
  @ApiProperty({ type: [UserResponse] }) data!: UserResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}
