import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { install, registerAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { FakeRemoteAgent, HOLD, startFakeRemoteAgent } from '../support/fake-remote-agent';
import { ServiceProcess, startService } from '../support/service-process';
import { quiesce } from '../support/quiesce';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';
import { Receiver } from '../support/webhook-receiver';

/**
 * Schedules fired by real service processes sharing one database (issue 17): exactly one run
 * per occurrence with two instances that both run the scheduler, also while one is restarted;
 * catch-up of occurrences that passed while no worker ran; overlap 'skip' with a run that
 * outlasts the interval. This test's app is APP_ROLE=api: it serves the API and fires nothing.
 * Each case starts the processes it needs and stops them, so a case without a worker has none.
 */
const SECRETS_KEY = randomBytes(32).toString('hex');
const COMMON_ENV = { SECRETS_KEY, OUTBOUND_ALLOWLIST: '127.0.0.1', WORKER_CONCURRENCY: '8' };
const MINUTE = 60_000;
const isoString = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

jest.setTimeout(420_000);

interface Recent {
  scheduledFor: string;
  outcome: 'started' | 'skipped' | 'missed';
  runId: string | null;
  at: string;
}
interface Schedule {
  id: string;
  workflowId: string;
  input: unknown;
  enabled: boolean;
  nextFireAt: string | null;
  lastFiredAt: string | null;
  recent: Recent[];
}
interface RunBody {
  id: string;
  status: string;
  input: unknown;
  createdAt: string;
  triggeredBy: { type: string; id: string; scheduledFor?: string };
}
interface ScheduleEvent {
  type: string;
  data: { scheduleId: string; workflowId: string; scheduledFor: string };
}

const iso = (ms: number) => new Date(ms).toISOString();
const sleepUntil = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms - Date.now())));

describe('schedules on several service processes', () => {
  let t: TestApp;
  let org: TestOrg;
  let remote: FakeRemoteAgent;
  let receiver: Receiver;
  let hangAgent: string;
  const processes: ServiceProcess[] = [];

  beforeAll(async () => {
    remote = await startFakeRemoteAgent({ '/hang': () => HOLD });
    receiver = new Receiver();
    await receiver.start();
    t = await createTestApp({ env: { APP_ROLE: 'api', ...COMMON_ENV } });
    org = await t.newOrg('enterprise');
    await install(t, org, 'transform');
    await install(t, org, 'http');
    hangAgent = await registerAgent(t, org, {
      name: 'hang',
      kind: 'http.agent',
      config: { url: `${remote.url}/hang` },
      timeoutMs: 300_000,
      maxAttempts: 1,
    });
    const hook = await t
      .http()
      .post('/api/webhooks')
      .set(bearer(org.admin))
      .send({ url: receiver.url('/schedules'), eventTypes: ['workflow.schedule.*'] });
    if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${JSON.stringify(hook.body)}`);
  });
  afterAll(async () => {
    await Promise.all(processes.splice(0).map((p) => p.kill()));
    await quiesce(t.app.get(DataSource), [org.id]);
    remote.dropHeld();
    await t.close();
    await remote.close();
    await receiver.close();
  });

  const start = async (role: 'all' | 'worker'): Promise<ServiceProcess> => {
    const service = await startService({ APP_ROLE: role, ...COMMON_ENV });
    processes.push(service);
    return service;
  };
  const stop = async (service: ServiceProcess, signal: NodeJS.Signals = 'SIGTERM') => {
    await service.kill(signal);
    processes.splice(processes.indexOf(service), 1);
  };

  const path = (workflowId: string, scheduleId?: string, action?: string) =>
    `/api/workflows/${workflowId}/schedules${scheduleId ? `/${scheduleId}` : ''}${action ? `/${action}` : ''}`;
  const workflow = async (name: string, steps: unknown[]): Promise<string> => {
    const res = await t.http().post('/api/workflows').set(bearer(org.admin)).send({ name, steps });
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  const quickWorkflow = (name: string) => workflow(name, [{ id: 'echo', action: 'transform.jsonata', with: { expression: '$' } }]);
  const schedule = async (workflowId: string, body: Record<string, unknown>): Promise<Schedule> => {
    const res = await t.http().post(path(workflowId)).set(bearer(org.admin)).send(body);
    if (res.status !== 201) throw new Error(`create schedule: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as Schedule;
  };
  const shown = async (workflowId: string, scheduleId: string): Promise<Schedule> => {
    const res = await t.http().get(path(workflowId, scheduleId)).set(bearer(org.viewer));
    if (res.status !== 200) throw new Error(`get schedule: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as Schedule;
  };
  const pause = async (workflowId: string, scheduleId: string) => {
    const res = await t
      .http()
      .post(path(workflowId, scheduleId, 'pause'))
      .set(bearer(org.admin));
    if (res.status !== 200) throw new Error(`pause: ${res.status} ${JSON.stringify(res.body)}`);
  };
  const runsOf = async (workflowId: string, scheduleId?: string): Promise<RunBody[]> => {
    const res = await t.http().get(`/api/workflows/${workflowId}/runs?limit=100`).set(bearer(org.viewer));
    if (res.status !== 200) throw new Error(`runs: ${res.status} ${JSON.stringify(res.body)}`);
    const runs = res.body.data as RunBody[];
    return scheduleId ? runs.filter((r) => r.triggeredBy.type === 'schedule' && r.triggeredBy.id === scheduleId) : runs;
  };
  const scheduledFor = (runs: RunBody[]) => runs.map((r) => r.triggeredBy.scheduledFor!).sort();
  const events = (type: string, scheduleId: string): ScheduleEvent[] =>
    receiver
      .on('/schedules')
      .map((r) => JSON.parse(r.body) as ScheduleEvent)
      .filter((e) => e.type === type && e.data?.scheduleId === scheduleId);

  /** No schedule occurrence anywhere in the database has more than one run (the idempotency key's promise). */
  const duplicatedOccurrences = () =>
    t.app.get(DataSource).query<Array<{ id: string; at: string; runs: string }>>(
      `SELECT triggered_by->>'id' AS id, triggered_by->>'scheduledFor' AS at, count(*)::text AS runs
         FROM workflow_runs WHERE triggered_by->>'type' = 'schedule'
        GROUP BY 1, 2 HAVING count(*) > 1`,
    );

  /**
   * Waits, if need be, until the current minute has at least 15 s left: a case creates its
   * every-minute schedules after this and makes them due with `dueNow` in the same minute, so
   * no schedule has fired on its own before it is made due (it would fire that minute twice).
   */
  const clearOfMinuteEnd = async () => {
    if (Date.now() % MINUTE > 45_000) await sleepUntil(Math.ceil(Date.now() / MINUTE) * MINUTE + 500);
  };

  /**
   * Makes the schedules due now, at this minute's occurrence (a cron time less than a minute
   * ago: on time), as if they had been created before it: the first occurrence fires within a
   * tick instead of at the next minute. Only schedules that have never fired are moved (one
   * that fired would fire its occurrence again). Answers the occurrence and when it was made due.
   */
  const dueNow = async (scheduleIds: string[]): Promise<{ occurrence: number; madeDueAt: number }> => {
    const madeDueAt = Date.now();
    const rows = await t.app.get(DataSource).query<Array<{ due: Date }>>(
      `WITH moved AS (UPDATE workflow_schedules SET next_fire_at = date_trunc('minute', now())
                       WHERE id = ANY($1) AND last_fired_at IS NULL RETURNING next_fire_at)
         SELECT next_fire_at AS due FROM moved`,
      [scheduleIds],
    );
    const occurrences = new Set(rows.map((r) => new Date(r.due).getTime()));
    if (rows.length !== scheduleIds.length || occurrences.size !== 1) throw new Error(`dueNow: ${JSON.stringify(rows)}`);
    return { occurrence: [...occurrences][0], madeDueAt };
  };

  it("catches up after a time with no worker: 'none' runs nothing and records them missed, 'latest' runs one, 'all' runs each, at most 10", async () => {
    expect(processes).toHaveLength(0);
    const workflowId = await quickWorkflow('catch-up');
    // The current minute T; the schedules' occurrences are the minutes just before it, every
    // hour (a minute list): with T itself no occurrence, all of them are more than 60 s late
    // when a worker first looks, and the next natural one is about an hour away.
    const now = Date.now();
    const T = Math.floor(now / MINUTE) * MINUTE;
    const minutesBefore = (count: number) => Array.from({ length: count }, (_, i) => T - (count - i) * MINUTE);
    const cronOf = (times: number[]) =>
      `${times
        .map((ms) => new Date(ms).getUTCMinutes())
        .sort((a, b) => a - b)
        .join(',')} * * * *`;
    const five = minutesBefore(5);
    const twelve = minutesBefore(12);
    const cases = {
      none: {
        times: five,
        schedule: await schedule(workflowId, {
          cron: cronOf(five),
          timezone: 'UTC',
          catchUp: 'none',
          overlap: 'allow',
          input: { c: 'none' },
        }),
      },
      latest: {
        times: five,
        schedule: await schedule(workflowId, {
          cron: cronOf(five),
          timezone: 'UTC',
          catchUp: 'latest',
          overlap: 'allow',
          input: { c: 'latest' },
        }),
      },
      all: {
        times: five,
        schedule: await schedule(workflowId, {
          cron: cronOf(five),
          timezone: 'UTC',
          catchUp: 'all',
          overlap: 'allow',
          input: { c: 'all' },
        }),
      },
      bounded: {
        times: twelve,
        schedule: await schedule(workflowId, {
          cron: cronOf(twelve),
          timezone: 'UTC',
          catchUp: 'all',
          overlap: 'allow',
          input: { c: 'bounded' },
        }),
      },
    };
    for (const { times, schedule: s } of Object.values(cases)) {
      // As created, the next fire time is the first of the minutes, an hour on.
      expect(s.nextFireAt).toBe(iso(times[0] + 60 * MINUTE));
      const moved = await t.app
        .get(DataSource)
        .query('UPDATE workflow_schedules SET next_fire_at = $2 WHERE id = $1 RETURNING id', [s.id, iso(times[0])]);
      expect(moved[0]).toHaveLength(1);
    }
    // Nothing fires these while only this API instance runs.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(await runsOf(workflowId)).toEqual([]);

    const worker = await start('worker');
    const settled = async (s: Schedule, entries: number) =>
      eventually(
        async () => {
          const got = await shown(workflowId, s.id);
          return got.recent.length >= entries && got.nextFireAt !== null && Date.parse(got.nextFireAt) > Date.now() && got;
        },
        { timeoutMs: 30_000, intervalMs: 250, message: `schedule ${s.id} to catch up ${entries} occurrences` },
      );
    const newestFirst = (times: number[]) => [...times].reverse().map(iso);

    // none: no run; every occurrence recorded missed, newest first; a missed event for each.
    const none = await settled(cases.none.schedule, 5);
    expect(none.recent).toEqual(newestFirst(five).map((at) => ({ scheduledFor: at, outcome: 'missed', runId: null, at: isoString })));
    expect(none.nextFireAt).toBe(iso(five[0] + 60 * MINUTE));

    // latest: one run, for the latest; the earlier ones missed.
    const latest = await settled(cases.latest.schedule, 5);
    const latestRuns = await runsOf(workflowId, cases.latest.schedule.id);
    expect(latestRuns).toHaveLength(1);
    expect(latestRuns[0]).toMatchObject({
      input: { c: 'latest' },
      triggeredBy: { type: 'schedule', id: cases.latest.schedule.id, scheduledFor: iso(five[4]) },
    });
    expect(latest.recent).toEqual([
      { scheduledFor: iso(five[4]), outcome: 'started', runId: latestRuns[0].id, at: isoString },
      ...newestFirst(five.slice(0, 4)).map((at) => ({ scheduledFor: at, outcome: 'missed', runId: null, at: isoString })),
    ]);

    // all: a run for each of the five.
    const all = await settled(cases.all.schedule, 5);
    const allRuns = await runsOf(workflowId, cases.all.schedule.id);
    expect(scheduledFor(allRuns)).toEqual(five.map(iso));
    for (const run of allRuns) expect(run.input).toEqual({ c: 'all' });
    expect(all.recent.map((r) => [r.scheduledFor, r.outcome])).toEqual(newestFirst(five).map((at) => [at, 'started']));
    expect(all.recent.map((r) => r.runId).sort()).toEqual(allRuns.map((r) => r.id).sort());

    // all, twelve missed: the ten latest run, the two oldest are missed.
    const bounded = await settled(cases.bounded.schedule, 12);
    const boundedRuns = await runsOf(workflowId, cases.bounded.schedule.id);
    expect(scheduledFor(boundedRuns)).toEqual(twelve.slice(2).map(iso));
    expect(bounded.recent.map((r) => [r.scheduledFor, r.outcome])).toEqual([
      ...newestFirst(twelve.slice(2)).map((at) => [at, 'started']),
      ...newestFirst(twelve.slice(0, 2)).map((at) => [at, 'missed']),
    ]);

    expect(await runsOf(workflowId, cases.none.schedule.id)).toEqual([]);
    expect(await runsOf(workflowId)).toHaveLength(1 + 5 + 10);

    // A workflow.schedule.missed event for each missed occurrence.
    const missedOf = (s: Schedule) =>
      events('workflow.schedule.missed', s.id)
        .map((e) => e.data.scheduledFor)
        .sort();
    await eventually(
      () =>
        missedOf(cases.none.schedule).length >= 5 &&
        missedOf(cases.latest.schedule).length >= 4 &&
        missedOf(cases.bounded.schedule).length >= 2,
      {
        timeoutMs: 30_000,
        intervalMs: 250,
        message: () => `the missed events (${receiver.on('/schedules').length} received)`,
      },
    );
    expect(missedOf(cases.none.schedule)).toEqual(five.map(iso));
    expect(missedOf(cases.latest.schedule)).toEqual(five.slice(0, 4).map(iso));
    expect(missedOf(cases.bounded.schedule)).toEqual(twelve.slice(0, 2).map(iso));
    expect(missedOf(cases.all.schedule)).toEqual([]);
    // Each event's data: the schedule, its workflow, the occurrence (events arrive in any order).
    const noneEvents = events('workflow.schedule.missed', cases.none.schedule.id).map((e) => e.data);
    noneEvents.sort((a, b) => a.scheduledFor.localeCompare(b.scheduledFor));
    expect(noneEvents).toEqual(five.map((at) => ({ scheduleId: cases.none.schedule.id, workflowId, scheduledFor: iso(at) })));

    for (const { schedule: s } of Object.values(cases)) await pause(workflowId, s.id);
    await stop(worker);
    expect(await duplicatedOccurrences()).toEqual([]);
  });

  it("skips an occurrence while the schedule's previous run still runs (overlap 'skip'); 'allow' starts another", async () => {
    const worker = await start('worker');
    await clearOfMinuteEnd();
    const slow = await workflow('outlasts a minute', [{ id: 'wait', agent: hangAgent }]);
    const slowToo = await workflow('outlasts a minute too', [{ id: 'wait', agent: hangAgent }]);
    const skip = await schedule(slow, { cron: '* * * * *', timezone: 'UTC', overlap: 'skip', input: { o: 'skip' } });
    const allow = await schedule(slowToo, { cron: '* * * * *', timezone: 'UTC', overlap: 'allow', input: { o: 'allow' } });
    expect(allow.nextFireAt).toBe(skip.nextFireAt);
    const { occurrence: first } = await dueNow([skip.id, allow.id]);
    const second = first + MINUTE;

    // The first occurrence starts a run, whose step is held by the remote end.
    const [firstRun] = await eventually(
      async () => {
        const runs = await runsOf(slow);
        return runs.length > 0 && remote.calls.has(`${runs[0].id}:wait`) && runs;
      },
      { timeoutMs: 15_000, intervalMs: 250, message: 'the first run and its held call' },
    );
    expect(firstRun.triggeredBy).toEqual({ type: 'schedule', id: skip.id, scheduledFor: iso(first) });

    // The second occurrence comes while it runs: recorded skipped for 'skip', a second run for 'allow'.
    await sleepUntil(second);
    await eventually(
      async () => (await shown(slow, skip.id)).recent.length >= 2 && (await runsOf(slowToo)).length >= 2,
      { timeoutMs: 30_000, intervalMs: 250, message: 'the second occurrence handled for both schedules' },
    );
    const during = await runsOf(slow);
    expect(during.map((r) => [r.id, r.status])).toEqual([[firstRun.id, 'running']]);
    const skipShown = await shown(slow, skip.id);
    expect(skipShown.recent.slice(0, 2)).toEqual([
      { scheduledFor: iso(second), outcome: 'skipped', runId: null, at: isoString },
      { scheduledFor: iso(first), outcome: 'started', runId: firstRun.id, at: isoString },
    ]);
    // 'allow' started a second run beside the first.
    const allowRuns = await runsOf(slowToo);
    expect(scheduledFor(allowRuns)).toEqual([iso(first), iso(second)]);
    expect(allowRuns.map((r) => r.status)).toEqual(['running', 'running']);

    // A workflow.schedule.skipped event for the skipped occurrence.
    const [skipped] = await eventually(
      () => events('workflow.schedule.skipped', skip.id).length > 0 && events('workflow.schedule.skipped', skip.id),
      {
        timeoutMs: 20_000,
        intervalMs: 250,
        message: 'the skipped event',
      },
    );
    expect(skipped.data).toEqual({ scheduleId: skip.id, workflowId: slow, scheduledFor: iso(second) });
    expect(events('workflow.schedule.skipped', allow.id)).toEqual([]);

    await pause(slow, skip.id);
    await pause(slowToo, allow.id);
    const started: Array<[string, string]> = [[slow, firstRun.id], ...allowRuns.map((r): [string, string] => [slowToo, r.id])];
    for (const [workflowId, runId] of started) {
      const res = await t.http().post(`/api/workflows/${workflowId}/runs/${runId}/cancel`).set(bearer(org.member));
      expect(res.status).toBe(200);
    }
    remote.dropHeld();
    expect(await runsOf(slow)).toHaveLength(1);
    await stop(worker);
  });

  it('starts exactly one run per occurrence on two instances for three occurrences, while one is restarted', async () => {
    const [one, two] = await Promise.all([start('all'), start('all')]);
    await clearOfMinuteEnd();
    const workflowId = await quickWorkflow('every minute');
    // Several schedules due at the same instants: more chances for two instances to collide.
    const schedules: Schedule[] = [];
    for (let i = 0; i < 5; i++)
      schedules.push(await schedule(workflowId, { cron: '* * * * *', timezone: 'UTC', overlap: 'allow', input: { i } }));
    for (const s of schedules) expect(s.nextFireAt).toBe(schedules[0].nextFireAt);
    // The first occurrence now (on both instances), then two natural minutes.
    const { occurrence: first, madeDueAt } = await dueNow(schedules.map((s) => s.id));
    const occurrences = [first, first + MINUTE, first + 2 * MINUTE];
    const ranEach = (count: number) =>
      eventually(async () => (await runsOf(workflowId)).length >= count * schedules.length, {
        timeoutMs: 30_000,
        intervalMs: 250,
        message: `${count} run(s) of each schedule`,
      });
    await ranEach(1);
    for (const s of schedules) expect(scheduledFor(await runsOf(workflowId, s.id))).toEqual([iso(occurrences[0])]);

    // Restart one instance across the second minute: SIGTERM a second before it, then start it again.
    await sleepUntil(occurrences[1] - 1_000);
    await stop(one, 'SIGTERM');
    expect(two.alive()).toBe(true);
    const restarted = await start('all');
    await sleepUntil(occurrences[2]);
    await ranEach(3);
    for (const s of schedules) await pause(workflowId, s.id);

    for (const s of schedules) {
      const runs = await runsOf(workflowId, s.id);
      expect({ schedule: s.id, scheduledFor: scheduledFor(runs) }).toEqual({ schedule: s.id, scheduledFor: occurrences.map(iso) });
      for (const run of runs) {
        expect(run.input).toEqual(s.input);
        // Started within 5 s of its occurrence (of being made due, for the first).
        const scheduled = Date.parse(run.triggeredBy.scheduledFor!);
        const late = Date.parse(run.createdAt) - (scheduled === first ? madeDueAt : scheduled);
        expect({ run: run.id, lateMs: late, inTime: late >= 0 && late <= 5_000 }).toEqual({ run: run.id, lateMs: late, inTime: true });
      }
      const got = await shown(workflowId, s.id);
      expect(got.recent.map((r) => [r.scheduledFor, r.outcome])).toEqual([...occurrences].reverse().map((at) => [iso(at), 'started']));
      expect(got.recent.map((r) => r.runId).sort()).toEqual(runs.map((r) => r.id).sort());
    }
    expect(await runsOf(workflowId)).toHaveLength(3 * schedules.length);
    expect(await duplicatedOccurrences()).toEqual([]);
    expect(two.alive()).toBe(true);
    expect(restarted.alive()).toBe(true);
    await Promise.all([stop(two), stop(restarted)]);
  });
});
