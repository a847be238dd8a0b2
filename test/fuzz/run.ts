/**
 * `npm run fuzz`: the long run of the OpenAPI fuzzer against the built service (dist/src/main.js)
 * on a scratch PostgreSQL database. Prints the seed, the requests by status and the rate; exits 1
 * with the shrunk failing request when any answer is a 5xx or an error outside the envelope.
 *
 *   DATABASE_URL     PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test)
 *   FUZZ_SEED        the seed (default: the time); the same seed sends the same requests
 *   FUZZ_REQUESTS    how many (default 10000)
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  closeConnections,
  field,
  JsonClient,
  loginAndInstallTransform,
  randomCredentials,
  ScratchDatabases,
  serviceEnv,
  Services,
  unexpected,
} from '../../bench/support';
import { fuzz, FuzzRequest, FuzzResponse } from './openapi-fuzz';

const ROOT = resolve(__dirname, '../..');
const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
const numRuns = Number(process.env.FUZZ_REQUESTS ?? 10_000);

async function created(client: JsonClient, path: string, body: unknown): Promise<string> {
  const res = await client.request('POST', path, body);
  const id = field(res.body, 'id');
  if (res.status !== 201 || typeof id !== 'string') throw unexpected(`POST ${path}`, res.status, res.body);
  return id;
}

async function main(): Promise<void> {
  const credentials = randomCredentials();
  const databases = new ScratchDatabases(
    process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test',
    `platform_fuzz_${Date.now()}`,
  );
  const services = new Services(join(ROOT, 'dist', 'src', 'main.js'), ROOT);
  try {
    const service = await services.start('service', serviceEnv(credentials, await databases.create('fuzz'), 'all'), 120_000);
    const admin = await loginAndInstallTransform(service, credentials);
    const agent = await created(admin, '/api/agents', { name: 'fuzz', kind: 'transform.jsonata', config: { expression: '$' } });
    const victim = await created(admin, '/api/users', { email: 'victim@fuzz.test', password: 'a fuzz victim password', role: 'member' });
    const me = await admin.request('GET', '/api/auth/me');
    const organization = field(me.body, 'organization') as { id: string; slug: string };
    const send = async (req: FuzzRequest): Promise<FuzzResponse> => {
      const url = new URL(req.path, `http://127.0.0.1:${service.port}`);
      for (const [key, value] of Object.entries(req.query)) url.searchParams.set(key, value);
      const res = await fetch(url, { method: req.method, headers: req.headers, body: req.body, redirect: 'manual' });
      return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
    };
    const document = JSON.parse(readFileSync(join(ROOT, 'openapi.json'), 'utf8'));
    process.stdout.write(`fuzzing ${numRuns} requests, seed ${seed}\n`);
    const figures = await fuzz(
      document,
      {
        tokens: { admin: admin.token!, operator: admin.token! },
        known: { ids: [agent, victim, organization.id], orgSlugs: [organization.slug] },
        send,
      },
      { seed, numRuns },
    );
    services.assertAlive();
    const statuses = Object.entries(figures.byStatus)
      .map(([status, count]) => `${status}: ${count}`)
      .join(', ');
    process.stdout.write(
      `\n${figures.requests} requests in ${(figures.elapsedMs / 1000).toFixed(1)} s (${((figures.requests * 1000) / figures.elapsedMs).toFixed(0)}/s), seed ${seed}\n` +
        `by status: ${statuses}\nno 5xx; every error in the envelope with a code of the catalog\n`,
    );
  } finally {
    await services.close();
    await databases.dropAll();
    closeConnections();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`fuzz failed (seed ${seed}): ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
