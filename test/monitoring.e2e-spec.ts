import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { parse } from 'yaml';
import { install, registerAgent } from './support/agents';
import { bearer, createTestApp, scrapeMetrics, TestApp, TestOrg } from './support/test-app';

/**
 * The monitoring files in deploy/ against the service: every metric a dashboard query or an
 * alert rule names is one /metrics exposes, and the gauges and counters added for them report
 * what happened. promtool checks the files' syntax (scripts/check-monitoring.sh, in CI).
 */

const DEPLOY = join(__dirname, '..', 'deploy');
/** Series Prometheus makes itself, not the service. */
const PROMETHEUS_OWN = new Set(['up']);
const ALERTS = [
  'PlatformNoReadyApiReplica',
  'PlatformQueueBacklog',
  'PlatformHighErrorRate',
  'PlatformWebhookEndpointDisabled',
  'PlatformLicenseExpiring',
  'PlatformDeadTuplesHigh',
  'PlatformUnhandledRejection',
];

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid: string };
  targets?: Array<{ expr: string; datasource?: { uid: string } }>;
  panels?: Panel[];
}
interface Dashboard {
  schemaVersion: number;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query: unknown }> };
}
interface AlertRules {
  groups: Array<{
    name: string;
    rules: Array<{ alert: string; expr: string; for?: string; labels?: { severity?: string }; annotations?: { summary?: string } }>;
  }>;
}

const dashboard = JSON.parse(readFileSync(join(DEPLOY, 'grafana', 'platform-dashboard.json'), 'utf8')) as Dashboard;
const alerts = parse(readFileSync(join(DEPLOY, 'alerts.yml'), 'utf8')) as AlertRules;
const prometheus = parse(readFileSync(join(DEPLOY, 'prometheus.yml'), 'utf8')) as {
  rule_files: string[];
  scrape_configs: Array<{ job_name: string }>;
};

const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]).filter((p) => p.type !== 'row');
const queries: Array<{ where: string; expr: string }> = [
  ...panels.flatMap((p) => (p.targets ?? []).map((target) => ({ where: `dashboard panel "${p.title}"`, expr: target.expr }))),
  ...alerts.groups.flatMap((g) => g.rules.map((rule) => ({ where: `alert ${rule.alert}`, expr: rule.expr }))),
];

/**
 * The metric names in a PromQL expression: what is left once strings, label matchers, ranges,
 * offsets and `by (...)`-style label lists are taken out, that is neither a function (followed by `(`),
 * a keyword, a number nor a Grafana variable.
 */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\boffset\s+-?\w+/gi, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const keywords = new Set([
    'bool',
    'and',
    'or',
    'unless',
    'offset',
    'by',
    'without',
    'on',
    'ignoring',
    'group_left',
    'group_right',
    'inf',
    'nan',
  ]);
  const names = new Set<string>();
  for (const match of bare.matchAll(/\$\w+|\d+(?:\.\d+)?(?:e[+-]?\d+)?|([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/gi)) {
    const [, name, call] = match;
    if (name && !call && !keywords.has(name.toLowerCase())) names.add(name);
  }
  return [...names];
}

/** Series names /metrics exposes: every TYPE line's, with a histogram's or summary's own series. */
function exposedNames(scrape: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(name + suffix);
  }
  return names;
}

/** The value of the sample with exactly these labels, if /metrics has it. */
function sample(scrape: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const [, series, body, value] of scrape.matchAll(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/gm)) {
    if (series !== name) continue;
    const found = Object.fromEntries([...(body ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => [k, v]));
    if (Object.keys(found).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => found[k] === v))
      return Number(value);
  }
  return undefined;
}

describe('monitoring: the dashboard and the alert rules', () => {
  let t: TestApp;
  let org: TestOrg;
  let limited: TestOrg;
  let scrape: string;
  let queued: string;

  beforeAll(async () => {
    // API only: no worker here takes the execution below, so it stays in the queue.
    t = await createTestApp({ env: { APP_ROLE: 'api' } });
    [org, limited] = [await t.newOrg('enterprise'), await t.newOrg('enterprise')];
    await t.http().get(`/api/users/${org.member.id}`).set(bearer(org.admin)).expect(200);
    await t.http().get('/api/no-such-route').expect(404);

    // A queued execution whose job has been due for 10 minutes.
    await install(t, org, 'transform');
    const agentId = await registerAgent(t, org, { kind: 'transform.jsonata', config: { expression: 'text' } });
    const execution = await t
      .http()
      .post(`/api/agents/${agentId}/execute?wait=0`)
      .set(bearer(org.member))
      .send({ input: { text: 'x' } });
    expect(execution.status).toBe(202);
    queued = `/api/agents/${agentId}/history/${execution.body.id}`;
    const aged = await t.app
      .get(DataSource)
      .query(
        `UPDATE pgboss.job SET start_after = now() - interval '10 minutes' WHERE id = (SELECT job_id FROM agent_executions WHERE id = $1) AND state = 'created' RETURNING id`,
        [execution.body.id],
      );
    expect(aged[0]).toHaveLength(1);

    // One request over the organization's limit: the PATCH is the window's first request.
    await t.http().patch('/api/subscription').set(bearer(limited.admin)).send({ rateLimitPerMinute: 1 }).expect(200);
    await t.http().get('/api/plugins').set(bearer(limited.member)).expect(429);

    const res = await scrapeMetrics(t);
    expect(res.status).toBe(200);
    scrape = res.text;
  });
  afterAll(async () => {
    // Not left for the workers of the specs that follow.
    await t.http().post(`${queued}/cancel`).set(bearer(org.member));
    await t.close();
  });

  it('finds the metric names in PromQL', () => {
    expect(
      metricNames(
        'histogram_quantile(0.95, sum by (le, route) (rate(http_request_duration_seconds_bucket{job="platform-api", route!~"/metrics|x"}[$__rate_interval])))',
      ),
    ).toEqual(['http_request_duration_seconds_bucket']);
    expect(
      metricNames('min(license_expires_at_seconds) - time() < 14 * 86400 or absent(up{job="a"} == 1) unless on (x) foo offset 5m'),
    ).toEqual(['license_expires_at_seconds', 'up', 'foo']);
    expect(metricNames('sum(rate(a_total[1m])) / sum without (instance) (b:recorded) > 1e3')).toEqual(['a_total', 'b:recorded']);
  });

  it('queries only metrics that /metrics exposes', () => {
    expect(queries.length).toBeGreaterThan(20);
    const exposed = exposedNames(scrape);
    const missing = queries.flatMap(({ where, expr }) =>
      metricNames(expr)
        .filter((name) => !exposed.has(name) && !PROMETHEUS_OWN.has(name))
        .map((name) => `${name} (${where})`),
    );
    expect(missing).toEqual([]);
    // Every query names at least one metric (a parse that found none would prove nothing).
    expect(queries.filter(({ expr }) => metricNames(expr).length === 0)).toEqual([]);
  });

  it('has the panels the issue asks for, on the datasource and organization variables', () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    const variables = Object.fromEntries(dashboard.templating.list.map((v) => [v.name, v]));
    expect(variables.datasource).toMatchObject({ type: 'datasource', query: 'prometheus' });
    expect(variables.organization).toMatchObject({ type: 'query' });
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    for (const panel of panels) {
      expect({ panel: panel.title, uid: panel.datasource?.uid }).toEqual({ panel: panel.title, uid: '${datasource}' });
      expect(panel.targets?.length).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) expect(target.datasource?.uid).toBe('${datasource}');
    }
    const used = new Set(queries.filter((q) => q.where.startsWith('dashboard')).flatMap((q) => metricNames(q.expr)));
    for (const metric of [
      'http_requests_total',
      'http_request_duration_seconds_bucket',
      'agent_executions_total',
      'workflow_runs_total',
      'job_queue_depth',
      'job_queue_age_seconds',
      'webhook_delivery_lag_seconds_bucket',
      'webhook_deliveries_total',
      'rate_limit_refusals_total',
      'db_pool_connections',
      'db_dead_tuples',
    ]) {
      expect({ metric, used: used.has(metric) }).toEqual({ metric, used: true });
    }
    expect(queries.some((q) => q.expr.includes('rate_limit_refusals_total{organization=~"$organization"}'))).toBe(true);
  });

  it('has the seven alerts, each with a severity and a summary, on the scrape jobs prometheus.yml defines', () => {
    const rules = alerts.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert).sort()).toEqual([...ALERTS].sort());
    for (const rule of rules) {
      expect({ alert: rule.alert, severity: rule.labels?.severity, summary: typeof rule.annotations?.summary }).toEqual({
        alert: rule.alert,
        severity: expect.stringMatching(/^(warning|critical)$/),
        summary: 'string',
      });
    }
    expect(prometheus.rule_files).toEqual(['alerts.yml']);
    const jobs = prometheus.scrape_configs.map((c) => c.job_name);
    const named = queries.flatMap(({ expr }) => [...expr.matchAll(/\bjob="([^"]+)"/g)].map(([, job]) => job));
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((job) => !jobs.includes(job))).toEqual([]);
  });

  it('reports the queue age, the refusals by organization, the license expiry, the disabled endpoints, the pool and the dead tuples', () => {
    expect(sample(scrape, 'job_queue_age_seconds', { queue: 'agent-execution' })).toBeGreaterThanOrEqual(600);
    expect(sample(scrape, 'job_queue_depth', { queue: 'agent-execution', state: 'created' })).toBeGreaterThanOrEqual(1);
    expect(sample(scrape, 'rate_limit_refusals_total', { organization: limited.id })).toBe(1);
    expect(sample(scrape, 'rate_limit_refusals_total', { organization: org.id })).toBeUndefined();
    // The test suite's license: enterprise, issued for 30 days.
    const expiresIn = sample(scrape, 'license_expires_at_seconds', { tier: 'enterprise' })! - Date.now() / 1000;
    expect(expiresIn / 86_400).toBeGreaterThan(29);
    expect(expiresIn / 86_400).toBeLessThanOrEqual(30);
    expect(sample(scrape, 'webhook_endpoints_disabled_total', { reason: 'gone' })).toBe(0);
    expect(sample(scrape, 'webhook_endpoints_disabled_total', { reason: 'failing' })).toBe(0);
    const max = sample(scrape, 'db_pool_max_connections')!;
    expect(max).toBeGreaterThanOrEqual(1);
    expect(
      sample(scrape, 'db_pool_connections', { state: 'idle' })! + sample(scrape, 'db_pool_connections', { state: 'in_use' })!,
    ).toBeLessThanOrEqual(max);
    expect(sample(scrape, 'db_pool_waiting_requests')).toBe(0);
    for (const table of ['agent_executions', 'workflow_runs', 'pgboss.job_common'])
      expect({ table, dead: sample(scrape, 'db_dead_tuples', { table }) }).toEqual({ table, dead: expect.any(Number) });
  });

  it('is what the monitoring profile of docker-compose.yml mounts', () => {
    const compose = parse(readFileSync(join(__dirname, '..', 'docker-compose.yml'), 'utf8')) as {
      services: Record<string, { image?: string; profiles?: string[]; volumes?: string[] }>;
    };
    const { prometheus: prom, grafana } = compose.services;
    for (const service of [prom, grafana]) {
      expect(service.profiles).toEqual(['monitoring']);
      expect(service.image).toMatch(/^(prom\/prometheus|grafana\/grafana):v?\d+\.\d+\.\d+$/);
    }
    expect(prom.volumes).toEqual(
      expect.arrayContaining([
        './deploy/prometheus.yml:/etc/prometheus/prometheus.yml:ro',
        './deploy/alerts.yml:/etc/prometheus/alerts.yml:ro',
      ]),
    );
    const provider = parse(readFileSync(join(DEPLOY, 'grafana', 'provisioning', 'dashboards', 'platform.yml'), 'utf8')) as {
      providers: Array<{ options: { path: string } }>;
    };
    expect(grafana.volumes).toEqual(
      expect.arrayContaining([
        './deploy/grafana/provisioning:/etc/grafana/provisioning:ro',
        `./deploy/grafana/platform-dashboard.json:${provider.providers[0].options.path}/platform-dashboard.json:ro`,
      ]),
    );
  });
});
