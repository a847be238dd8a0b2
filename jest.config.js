const net = require('node:net');

/**
 * Unit specs live beside the code; e2e specs in test/ run against a real database: a fresh
 * one on the server DATABASE_URL names, or embedded PGlite when it is unset. Specs in
 * test/postgres-only/ check what PGlite cannot do (advisory locks across connections, processes
 * sharing one server); specs in test/redis-only/ need a Redis server. Both are skipped, with a
 * line saying so, when what they need is not there; CI provides both.
 */
/**
 * Specs are compiled by SWC, file by file, with no type checking (`npm run typecheck` does that):
 * a cold run compiles the whole app for each worker, and ts-jest took minutes of CPU where SWC
 * takes seconds. Nest's dependency injection reads the constructor parameter types that
 * `decoratorMetadata` emits, as tsc's emitDecoratorMetadata does.
 */
const swc = [
  '@swc/jest',
  {
    jsc: {
      target: 'es2023',
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: true },
      keepClassNames: true,
    },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
  },
];

/** Answers whether a Redis server answers PING at `url` within a second. */
function redisAnswers(url) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname.replace(/^\[|\]$/g, ''), port: Number(port || 6379) });
    const done = (answer) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(1000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

/**
 * The Redis specs run when REDIS_URL is set (then a Redis that is down fails them, as CI wants)
 * or when a Redis answers at TEST_REDIS_URL (default 127.0.0.1:6379). They get the URL as
 * TEST_REDIS_URL; REDIS_URL itself is taken out of the environment, so every other test app
 * keeps the per-process counters it is written against.
 */
async function redisSpecs() {
  const required = process.env.REDIS_URL;
  const url = required || process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';
  delete process.env.REDIS_URL;
  process.env.TEST_REDIS_URL = url;
  if (required || (await redisAnswers(url))) return true;
  console.log(`Redis not reachable at ${url}: skipping the cross-instance rate-limit specs (test/redis-only/); CI runs them`);
  return false;
}

module.exports = async () => {
  const skipped = [];
  if (!process.env.DATABASE_URL) skipped.push('/test/postgres-only/');
  if (!(await redisSpecs())) skipped.push('/test/redis-only/');
  return {
    testTimeout: 30000,
    // Two workers, one per core; TEST_WORKERS sets another count (CI keeps two: with three the
    // chaos specs run side by side and miss their bounds).
    maxWorkers: Number(process.env.TEST_WORKERS || 2),
    testSequencer: '<rootDir>/test/setup/slow-first.js',
    // `npm test` runs the spec files in worker processes (maxWorkers above), each on a database
    // of its own (test/setup/worker-database.ts). Jest replaces a worker once a spec file leaves
    // it holding more than this: each file's module graph (the whole Nest app, loaded as ES
    // modules) is not all reclaimed, and one process running every file in turn once ran out of
    // its 4 GB heap.
    workerIdleMemoryLimit: '1GB',
    projects: [
      {
        displayName: 'unit',
        testEnvironment: 'node',
        rootDir: '.',
        testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/console/src/**/*.spec.ts'],
        transform: { '^.+\\.ts$': swc },
      },
      {
        displayName: 'e2e',
        testEnvironment: 'node',
        rootDir: '.',
        testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
        testPathIgnorePatterns: skipped,
        transform: { '^.+\\.ts$': swc },
        setupFiles: ['<rootDir>/test/setup/worker-database.ts'],
        globalSetup: '<rootDir>/test/setup/global-setup.ts',
        globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
      },
    ],
  };
};
