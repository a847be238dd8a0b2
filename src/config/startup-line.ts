import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { AppConfig } from './app-config';

/** The trial as the startup line tells it (TRIAL=true): until when, or that it ended. */
export interface TrialNote {
  active: boolean;
  endsAt: Date;
  daysLeft: number;
}

/**
 * The one line a process logs once it listens: where to reach it, where the API docs are, its
 * role and its database (never the password), and with TRIAL=true the trial. `address` is what
 * the HTTP server is bound to (the real port when PORT=0).
 */
export function startupLine(config: AppConfig, address: AddressInfo | string | null, trial: TrialNote | null = null): string {
  const port = address && typeof address === 'object' ? address.port : config.http.port;
  const host = config.http.host;
  const everyInterface = host === '0.0.0.0' || host === '::';
  const url = `http://${everyInterface ? 'localhost' : host.includes(':') ? `[${host}]` : host}:${port}`;
  const where = everyInterface ? `${url} (listening on ${host}:${port}, every interface)` : url;
  const parts = config.runsApi
    ? [`Platform ready at ${where}`, `API docs ${url}/api/docs`]
    : [`Platform worker ready: health and metrics at ${where}, no API`];
  if (config.publicUrl !== `http://localhost:${config.http.port}`) parts.push(`public URL ${config.publicUrl}`);
  parts.push(`role ${config.role}`, `database ${databaseOf(config)}`);
  if (config.database.readUrl && config.runsApi)
    parts.push(`history lists from the replica ${postgresOf(config.database.readUrl, 'DATABASE_READ_URL')}`);
  if (trial) {
    const days = `${trial.daysLeft} ${trial.daysLeft === 1 ? 'day' : 'days'} left`;
    parts.push(
      trial.active
        ? `TRIAL until ${trial.endsAt.toISOString()} (${days}): enterprise features, loopback targets allowed`
        : `TRIAL ended on ${trial.endsAt.toISOString()}: back to what the license allows`,
    );
  }
  return parts.join('; ');
}

function databaseOf(config: AppConfig): string {
  const { url, dataDir } = config.database;
  if (!url) return `embedded PGlite, data in ${join(dataDir, 'pglite')}`;
  return `PostgreSQL ${postgresOf(url, 'DATABASE_URL')}`;
}

/** `<database> on <host>[ as <user>]` of a postgres:// URL (the variable's), without its password. */
function postgresOf(url: string, variable: string): string {
  try {
    const parsed = new URL(url);
    const name = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || '(default)';
    const user = parsed.username ? ` as ${decodeURIComponent(parsed.username)}` : '';
    return `${name} on ${parsed.host || 'localhost'}${user}`;
  } catch {
    return `at ${variable}`;
  }
}
