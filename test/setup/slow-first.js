const TestSequencer = require('@jest/test-sequencer').default;

/**
 * Spec files that take long, with about how many seconds each took on the 2-core machine (two
 * workers on PostgreSQL, 2026-12-03): they start first, so no worker is left running one
 * of them alone at the end. Most of them wait on service processes, outages and minute turns,
 * not on the CPU. A warm Jest cache (a developer's machine) knows every file's last time and
 * that wins; on a clean CI machine there is none, and Jest's own fallback (the largest file
 * first) would start the 200-second schedule spec wherever its size falls.
 */
const EXPECTED_SECONDS = {
  'test/postgres-only/schedules-instances.e2e-spec.ts': 210,
  'test/postgres-only/workflows-chaos.e2e-spec.ts': 115,
  'test/postgres-only/agents-chaos.e2e-spec.ts': 100,
  'test/postgres-only/workflow-waits-chaos.e2e-spec.ts': 100,
  'test/operator-tools.e2e-spec.ts': 95,
  'test/postgres-only/agents-tools-chaos.e2e-spec.ts': 75,
  'test/postgres-only/rolling-restart.e2e-spec.ts': 70,
  'test/postgres-only/console.e2e-spec.ts': 60,
  'test/postgres-only/webhooks-durability.e2e-spec.ts': 55,
  'test/postgres-only/fairness.e2e-spec.ts': 50,
  'src/database/embedded-postgres.spec.ts': 45,
  'test/postgres-only/api-keys-instances.e2e-spec.ts': 40,
  'test/cli.e2e-spec.ts': 35,
  'test/postgres-only/backup-restore.e2e-spec.ts': 30,
  'test/postgres-only/workflow-concurrency.e2e-spec.ts': 30,
  'test/postgres-only/air-gapped.e2e-spec.ts': 25,
  'test/embedded.e2e-spec.ts': 25,
  'test/walkthrough.e2e-spec.ts': 20,
};

/** Runs the longest spec files first: by the time the last run took, else by the table above, else by size. */
class SlowFirst extends TestSequencer {
  sort(tests) {
    const expectedMs = (test) => this.time(test) ?? 1000 * (EXPECTED_SECONDS[test.path.slice(test.context.config.rootDir.length + 1)] ?? 0);
    const size = (test) => test.context.hasteFS.getSize(test.path) ?? 0;
    return [...tests].sort((a, b) => expectedMs(b) - expectedMs(a) || size(b) - size(a));
  }
}

module.exports = SlowFirst;
