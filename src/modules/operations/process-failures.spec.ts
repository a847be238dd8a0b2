import { spawn } from 'node:child_process';
import { join } from 'node:path';

/**
 * A process with the handlers installed, as main.ts installs them once booted: `failure` is
 * the script's last lines (one rejection nobody handles, or one throw nobody catches). Waits
 * for the process to end and answers its exit code and output.
 */
function runWatched(failure: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = `
    require('reflect-metadata');
    const { Metrics } = require('./src/shared/metrics/metrics');
    const { ProcessFailures } = require('./src/modules/operations/process-failures');
    const metrics = new Metrics();
    new ProcessFailures(metrics).watch();
    const report = async () => {
      const text = await metrics.registry.metrics();
      process.stdout.write(text.split('\\n').filter((l) => l.startsWith('platform_unhandled_rejections_total')).join('\\n') + '\\n');
    };
    ${failure}
  `;
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], {
    cwd: join(__dirname, '../../..'),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

jest.setTimeout(60_000);

describe('ProcessFailures', () => {
  it('logs and counts a rejection nobody handled, and the process goes on', async () => {
    const { code, stdout, stderr } = await runWatched(`
      Promise.reject(new Error('The execution was canceled'));
      Promise.reject(new Error('and another'));
      setImmediate(async () => { await report(); process.stdout.write('still running\\n'); });
    `);
    expect({ code, stderr }).toEqual({ code: 0, stderr: expect.stringContaining('A promise rejected with no handler') as unknown });
    expect(stderr).toContain('The execution was canceled');
    expect(stdout).toContain('platform_unhandled_rejections_total 2');
    expect(stdout).toContain('still running');
  });

  it('logs an exception nobody caught and exits 1', async () => {
    const { code, stdout, stderr } = await runWatched(`
      setTimeout(() => { throw new Error('state half-changed'); });
      // Due in the same turn of the timers as the throw, so it runs unless the process ended there.
      setTimeout(() => process.stdout.write('still running\\n'));
    `);
    expect(code).toBe(1);
    expect(stderr).toContain('An exception nothing caught');
    expect(stderr).toContain('state half-changed');
    expect(stdout).not.toContain('still running');
  });
});
