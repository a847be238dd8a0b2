import { IsEmail, IsOptional, IsString, MaxLength, MinLength, ValidateNested } from 'class-validator';
import { Type } from 'class-transformer';
import { DomainError } from '../errors/domain-error';
import { validationPipe } from './validation';

class Admin {
  @IsEmail()
  @MaxLength(320)
  email!: string;
}

class Signup {
  @IsEmail()
  @MaxLength(320)
  email!: string;

  @IsOptional()
  @IsString()
  @MinLength(3)
  nickname?: string;

  @ValidateNested()
  @Type(() => Admin)
  admin!: Admin;
}

async function detailsOf(body: unknown) {
  const error: unknown = await validationPipe()
    .transform(body, { type: 'body', metatype: Signup })
    .then(
      () => null,
      (e: unknown) => e,
    );
  if (!(error instanceof DomainError)) throw new Error('expected VALIDATION_FAILED');
  expect(error.code).toBe('VALIDATION_FAILED');
  return error.details;
}

describe('validationPipe', () => {
  it('answers a missing required field with one detail: "<path> is required"', async () => {
    expect(await detailsOf({ admin: { email: 'a@b.example' } })).toEqual([{ path: 'email', message: 'email is required' }]);
  });

  it('says "is required" for a missing nested field too, with its path', async () => {
    expect(await detailsOf({ email: 'a@b.example', admin: {} })).toEqual([{ path: 'admin.email', message: 'admin.email is required' }]);
  });

  it("keeps the rules' own messages for a value that is there but wrong, null included", async () => {
    expect(await detailsOf({ email: 'nope', admin: { email: 'a@b.example' }, nickname: 'x' })).toEqual([
      { path: 'email', message: 'email must be an email' },
      { path: 'nickname', message: 'nickname must be longer than or equal to 3 characters' },
    ]);
    expect(await detailsOf({ email: null, admin: { email: 'a@b.example' } })).toEqual(
      expect.arrayContaining([{ path: 'email', message: 'email must be an email' }]),
    );
  });

  it('still names unknown fields as not allowed', async () => {
    expect(await detailsOf({ email: 'a@b.example', admin: { email: 'a@b.example' }, role: 'admin' })).toEqual([
      { path: 'role', message: 'property role should not exist' },
    ]);
  });
});
