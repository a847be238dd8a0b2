import { Module } from '@nestjs/common';
import { UsersController } from './api/users.controller';
import { UsersService } from './application/users.service';
import { PasswordHasher } from './domain/password-hasher';
import { UserRepository } from './domain/user.repository';
import { Argon2PasswordHasher } from './infrastructure/argon2-password-hasher';
import { TypeOrmUserRepository } from './infrastructure/typeorm-user.repository';

@Module({
  controllers: [UsersController],
  providers: [
    UsersService,
    { provide: UserRepository, useClass: TypeOrmUserRepository },
    { provide: PasswordHasher, useFactory: () => new Argon2PasswordHasher() },
  ],
  exports: [UsersService, UserRepository, PasswordHasher],
})
export class UsersModule {}
