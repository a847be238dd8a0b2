/**
 * Unit specs live beside the code; e2e specs in test/ run against a real database: a fresh
 * one on the server DATABASE_URL names, or embedded PGlite when it is unset. Specs in
 * test/postgres-only/ check what PGlite cannot do (advisory locks across connections).
 */
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json' }];
module.exports = {
  testTimeout: 30000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/src/**/*.spec.ts'],
      transform: { '^.+\\.ts$': tsJest },
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      testPathIgnorePatterns: process.env.DATABASE_URL ? [] : ['/test/postgres-only/'],
      transform: { '^.+\\.ts$': tsJest },
      globalSetup: '<rootDir>/test/setup/global-setup.ts',
      globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
    },
  ],
};
