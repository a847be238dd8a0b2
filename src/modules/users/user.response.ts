import { ApiProperty } from '@nestjs/swagger';
import { Role, ROLES } from '../../shared/auth/principal';
import { User } from './domain/user';

/**
 * The user as the API shows it: the users module's published representation, which other
 * modules' APIs embed (auth's /me) instead of reaching into this module's api/.
 */
export class UserResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'uuid' }) organizationId!: string;
  @ApiProperty() email!: string;
  @ApiProperty({ type: String, nullable: true, description: 'From the identity provider (SSO users)' }) firstName!: string | null;
  @ApiProperty({ type: String, nullable: true }) lastName!: string | null;
  @ApiProperty({ enum: ROLES }) role!: Role;
  @ApiProperty() disabled!: boolean;
  @ApiProperty({ description: 'Instance operator: may create and list organizations' }) isOperator!: boolean;
  @ApiProperty({ format: 'date-time' }) createdAt!: string;
  @ApiProperty({ format: 'date-time' }) updatedAt!: string;

  static from(user: User): UserResponse {
    return {
      id: user.id,
      organizationId: user.organizationId,
      email: user.email,
      firstName: user.firstName,
      lastName: user.lastName,
      role: user.role,
      disabled: user.disabled,
      isOperator: user.isOperator,
      createdAt: user.createdAt.toISOString(),
      updatedAt: user.updatedAt.toISOString(),
    };
  }
}
