import { randomUUID } from 'node:crypto';
import { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { install } from './support/agents';
import { eventually } from './support/eventually';
import { bearer, createTestApp, TestApp, TestOrg, TestUser } from './support/test-app';
import { expectError } from './support/envelope';

/**
 * Workflow schedules (issue 17, part 1), written from the contract: the routes under
 * /api/workflows/:id/schedules, who may call them, what they refuse, the next fire times
 * (`occurrences`) read in the schedule's time zone, pause and resume, a run started by hand
 * (`trigger`), and a `* * * * *` schedule firing on its own. This app runs with the default
 * APP_ROLE=all, so it is also the worker that fires schedules. The multi-process cases
 * (exactly once across instances, catch-up, overlap) are in postgres-only/schedules-instances.
 */
const jsonata = (expression: string) => ({ action: 'transform.jsonata', with: { expression } });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MINUTE = 60_000;

/** An ISO date-time as the rest of the API writes it (Date#toISOString: UTC, milliseconds, Z). */
const isoString = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
const isIso = (value: unknown): value is string => typeof value === 'string' && new Date(value).toISOString() === value;

/** The wall-clock reading of an instant in a time zone. */
function local(iso: string, timeZone: string): { date: string; time: string; weekday: string } {
  const parts = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    weekday: 'short',
    hourCycle: 'h23',
  }).formatToParts(new Date(iso));
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)!.value;
  return {
    date: `${part('year')}-${part('month')}-${part('day')}`,
    time: `${part('hour')}:${part('minute')}:${part('second')}`,
    weekday: part('weekday'),
  };
}

/** The day Europe/Berlin moves from 02:00 to 03:00: the last Sunday of March (no 02:30 that day). */
const isBerlinSpringForward = (date: string, weekday: string) => /-03-(2[5-9]|3[01])$/.test(date) && weekday === 'Sun';

interface Schedule {
  id: string;
  workflowId: string;
  cron: string;
  timezone: string;
  input: unknown;
  overlap: string;
  catchUp: string;
  enabled: boolean;
  nextFireAt: string | null;
  lastFiredAt: string | null;
  createdAt: string;
  updatedAt: string;
  recent?: Array<{ scheduledFor: string; outcome: string; runId: string | null; at: string }>;
}

interface RunBody {
  id: string;
  workflowId: string;
  status: string;
  input: unknown;
  output: unknown;
  createdAt: string;
  triggeredBy: { type: string; id: string; scheduledFor?: string };
}

describe('workflow schedules', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    // Enterprise: these specs make more requests than the smaller tiers' per-minute budgets.
    [org, other] = [await t.newOrg('enterprise'), await t.newOrg('enterprise')];
    await install(t, org, 'transform');
    await install(t, other, 'transform');
  });
  afterAll(async () => {
    await t.close();
  });

  const path = (workflowId: string, scheduleId?: string, action?: string) =>
    `/api/workflows/${workflowId}/schedules${scheduleId ? `/${scheduleId}` : ''}${action ? `/${action}` : ''}`;

  /** A workflow doubling `input.n`, with an inputSchema requiring a number n. */
  const workflow = async (owner: TestOrg = org, name = 'scheduled'): Promise<string> => {
    const res = await t
      .http()
      .post('/api/workflows')
      .set(bearer(owner.admin))
      .send({
        name,
        inputSchema: { type: 'object', required: ['n'], properties: { n: { type: 'number' } } },
        steps: [{ id: 'double', ...jsonata('$ * 2'), input: 'input.n' }],
        output: 'steps.double.output',
      });
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };

  /** A workflow without an inputSchema. */
  const freeWorkflow = async (): Promise<string> => {
    const res = await t
      .http()
      .post('/api/workflows')
      .set(bearer(org.admin))
      .send({ name: 'free', steps: [{ id: 'a', ...jsonata('$') }] });
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };

  const create = (workflowId: string, body: Record<string, unknown>, as: TestUser = org.admin) =>
    t.http().post(path(workflowId)).set(bearer(as)).send(body);
  const created = async (workflowId: string, body: Record<string, unknown>, as: TestUser = org.admin): Promise<Schedule> => {
    const res = await create(workflowId, body, as);
    if (res.status !== 201) throw new Error(`create schedule: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as Schedule;
  };
  const get = (workflowId: string, scheduleId: string, as: TestUser = org.viewer) =>
    t.http().get(path(workflowId, scheduleId)).set(bearer(as));
  const occurrences = async (workflowId: string, scheduleId: string, query = ''): Promise<string[]> => {
    const res = await t
      .http()
      .get(`${path(workflowId, scheduleId, 'occurrences')}${query}`)
      .set(bearer(org.viewer));
    if (res.status !== 200) throw new Error(`occurrences: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data as string[];
  };
  const runsOf = async (workflowId: string): Promise<RunBody[]> => {
    const res = await t.http().get(`/api/workflows/${workflowId}/runs?limit=100`).set(bearer(org.viewer));
    if (res.status !== 200) throw new Error(`runs: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data as RunBody[];
  };
  /** 400 VALIDATION_FAILED with a detail naming `field` (a property of the input by its path, `input.n`, as POST /run names it). */
  const expectInvalid = (res: Response, field: string) => {
    expect({ status: res.status, code: res.body?.error?.code as unknown }).toEqual({ status: 400, code: 'VALIDATION_FAILED' });
    expect(res.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: field })]));
  };

  describe('create, read, change, delete', () => {
    let workflowId: string;
    beforeAll(async () => {
      workflowId = await workflow();
    });

    it('creates a schedule: 201, a Location, every field; GET answers the same body', async () => {
      const before = Date.now();
      const res = await create(workflowId, {
        cron: '0 9 * * 1-5',
        timezone: 'America/New_York',
        input: { n: 1 },
        overlap: 'allow',
        catchUp: 'all',
        enabled: true,
      });
      expect(res.status).toBe(201);
      const body = res.body as Schedule;
      expect(res.headers.location).toBe(path(workflowId, body.id));
      expect(body).toEqual({
        id: expect.stringMatching(UUID),
        workflowId,
        cron: '0 9 * * 1-5',
        timezone: 'America/New_York',
        input: { n: 1 },
        overlap: 'allow',
        catchUp: 'all',
        enabled: true,
        nextFireAt: isoString,
        lastFiredAt: null,
        createdAt: isoString,
        updatedAt: isoString,
        recent: [],
      });
      // The next fire time is the next weekday 09:00 in New York, after now.
      const next = body.nextFireAt!;
      expect(Date.parse(next)).toBeGreaterThan(before);
      expect(Date.parse(next) - before).toBeLessThanOrEqual(4 * 24 * 60 * MINUTE);
      const wall = local(next, 'America/New_York');
      expect(wall.time).toBe('09:00:00');
      expect(['Mon', 'Tue', 'Wed', 'Thu', 'Fri']).toContain(wall.weekday);
      expect((await occurrences(workflowId, body.id, '?count=1'))[0]).toBe(next);

      const read = await get(workflowId, body.id);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(body);
    });

    it('fills in the defaults: overlap skip, catchUp latest, enabled, input null', async () => {
      // A workflow without an inputSchema: a null input fits it.
      const body = await created(await freeWorkflow(), { cron: '15 4 * * *', timezone: 'UTC' });
      expect(body).toMatchObject({ cron: '15 4 * * *', timezone: 'UTC', input: null, overlap: 'skip', catchUp: 'latest', enabled: true });
      expect(local(body.nextFireAt!, 'UTC').time).toBe('04:15:00');
    });

    it('creates a disabled schedule with no next fire time', async () => {
      const body = await created(workflowId, { cron: '15 4 * * *', timezone: 'UTC', input: { n: 1 }, enabled: false });
      expect(body).toMatchObject({ enabled: false, nextFireAt: null });
    });

    it('lists the schedules of a workflow, and only those', async () => {
      const own = await workflow();
      const elsewhere = await workflow();
      const a = await created(own, { cron: '0 1 * * *', timezone: 'UTC', input: { n: 1 } });
      const b = await created(own, { cron: '0 2 * * *', timezone: 'Asia/Tokyo', input: { n: 2 } });
      await created(elsewhere, { cron: '0 3 * * *', timezone: 'UTC', input: { n: 3 } });
      for (const user of [org.admin, org.member, org.viewer]) {
        const res = await t.http().get(path(own)).set(bearer(user));
        expect(res.status).toBe(200);
        expect(res.body.nextCursor).toBeNull();
        const listed = res.body.data as Schedule[];
        expect(listed.map((s) => s.id).sort()).toEqual([a.id, b.id].sort());
        for (const item of listed) {
          // The list may leave `recent` out; everything else is the schedule's body.
          const { recent, ...rest } = item;
          const { recent: _unused, ...expected } = item.id === a.id ? a : b;
          expect(rest).toEqual(expected);
          if (recent !== undefined) expect(recent).toEqual([]);
        }
      }
    });

    it('changes a schedule with PATCH and recomputes its next fire time', async () => {
      const body = await created(workflowId, { cron: '0 9 * * 1-5', timezone: 'America/New_York', input: { n: 1 } });
      await new Promise((resolve) => setTimeout(resolve, 20));
      const res = await t
        .http()
        .patch(path(workflowId, body.id))
        .set(bearer(org.admin))
        .send({ cron: '45 23 * * *', timezone: 'Asia/Kolkata', input: { n: 2 }, overlap: 'allow', catchUp: 'none' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        ...body,
        cron: '45 23 * * *',
        timezone: 'Asia/Kolkata',
        input: { n: 2 },
        overlap: 'allow',
        catchUp: 'none',
        nextFireAt: isoString,
        updatedAt: isoString,
      });
      expect(Date.parse(res.body.updatedAt)).toBeGreaterThan(Date.parse(body.updatedAt));
      expect(local(res.body.nextFireAt, 'Asia/Kolkata').time).toBe('23:45:00');
      expect(Date.parse(res.body.nextFireAt) - Date.now()).toBeLessThanOrEqual(24 * 60 * MINUTE);
      expect(res.body.nextFireAt).toBe((await occurrences(workflowId, body.id, '?count=1'))[0]);
      expect((await get(workflowId, body.id)).body).toEqual(res.body);

      // One field alone; the others stay.
      const only = await t
        .http()
        .patch(path(workflowId, body.id))
        .set(bearer(org.admin))
        .send({ input: { n: 3 } });
      expect(only.status).toBe(200);
      expect(only.body).toMatchObject({
        cron: '45 23 * * *',
        timezone: 'Asia/Kolkata',
        input: { n: 3 },
        overlap: 'allow',
        catchUp: 'none',
      });

      // enabled false: no next fire time; enabled true again: the next one.
      const off = await t.http().patch(path(workflowId, body.id)).set(bearer(org.admin)).send({ enabled: false });
      expect(off.status).toBe(200);
      expect(off.body).toMatchObject({ enabled: false, nextFireAt: null });
      const on = await t.http().patch(path(workflowId, body.id)).set(bearer(org.admin)).send({ enabled: true });
      expect(on.status).toBe(200);
      expect(on.body).toMatchObject({ enabled: true, nextFireAt: res.body.nextFireAt });
    });

    it('deletes a schedule: 204, then 404 SCHEDULE_NOT_FOUND', async () => {
      const body = await created(workflowId, { cron: '0 9 * * *', timezone: 'UTC', input: { n: 1 } });
      const res = await t.http().delete(path(workflowId, body.id)).set(bearer(org.admin));
      expect(res.status).toBe(204);
      expectError(await get(workflowId, body.id), 404, 'SCHEDULE_NOT_FOUND');
      expectError(await t.http().delete(path(workflowId, body.id)).set(bearer(org.admin)), 404, 'SCHEDULE_NOT_FOUND');
      expect(((await t.http().get(path(workflowId)).set(bearer(org.viewer))).body.data as Schedule[]).map((s) => s.id)).not.toContain(
        body.id,
      );
    });

    it('allows at most 20 schedules per workflow: the 21st is 409 SCHEDULE_LIMIT_REACHED', async () => {
      const full = await workflow();
      for (let i = 0; i < 20; i++) await created(full, { cron: `${i} 5 * * *`, timezone: 'UTC', input: { n: i } });
      const res = await create(full, { cron: '21 5 * * *', timezone: 'UTC', input: { n: 21 } });
      expectError(res, 409, 'SCHEDULE_LIMIT_REACHED');
      expect((await t.http().get(path(full)).set(bearer(org.viewer))).body.data).toHaveLength(20);
    });
  });

  // The request's shape (fields, types, enums, ids, query bounds) and who may call each route
  // (roles, API-key scopes) are checked in src/modules/triggers/api/schedules.controller.spec.ts;
  // here, what the service decides: cron and time zone, the workflow's inputSchema, tenants.
  describe('validation', () => {
    let workflowId: string;
    let scheduleId: string;
    beforeAll(async () => {
      workflowId = await workflow();
      scheduleId = (await created(workflowId, { cron: '0 9 * * *', timezone: 'UTC', input: { n: 1 } })).id;
    });

    const valid = { cron: '0 9 * * *', timezone: 'UTC', input: { n: 1 } };
    it.each([
      ['three fields', { cron: '* * *' }, 'cron'],
      ['six fields', { cron: '0 * * * * *' }, 'cron'],
      ['minute 61', { cron: '61 * * * *' }, 'cron'],
      ['hour 24', { cron: '0 24 * * *' }, 'cron'],
      ['month 13', { cron: '0 0 1 13 *' }, 'cron'],
      ['words', { cron: 'every day at nine' }, 'cron'],
      ['an empty cron', { cron: '' }, 'cron'],
      ['a time zone that does not exist', { timezone: 'Mars/Base' }, 'timezone'],
      ['an input the inputSchema refuses', { input: { m: 1 } }, 'input'],
      ['an input of the wrong type', { input: { n: 'one' } }, 'input.n'],
      ['no input, where the inputSchema wants an object', { input: undefined }, 'input'],
    ])('refuses %s: 400 VALIDATION_FAILED naming the field', async (_what, change, field) => {
      const body: Record<string, unknown> = { ...valid, ...change };
      for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key];
      const res = await create(workflowId, body);
      expectInvalid(res, field);
      expect((await t.http().get(path(workflowId)).set(bearer(org.viewer))).body.data).toHaveLength(1);
    });

    it.each([
      ['a bad cron', { cron: '61 * * * *' }, 'cron'],
      ['a bad time zone', { timezone: 'Mars/Base' }, 'timezone'],
      ['an input the inputSchema refuses', { input: { m: 1 } }, 'input'],
    ])('refuses a PATCH with %s and changes nothing', async (_what, change, field) => {
      const before = (await get(workflowId, scheduleId)).body as Schedule;
      expectInvalid(await t.http().patch(path(workflowId, scheduleId)).set(bearer(org.admin)).send(change), field);
      expect((await get(workflowId, scheduleId)).body).toEqual(before);
    });

    it('checks the input against the inputSchema of a workflow without one: anything goes', async () => {
      expect((await create(await freeWorkflow(), { cron: '0 9 * * *', timezone: 'UTC', input: [1, 'two'] })).status).toBe(201);
    });
  });

  describe('access', () => {
    let workflowId: string;
    let scheduleId: string;
    beforeAll(async () => {
      workflowId = await workflow();
      scheduleId = (await created(workflowId, { cron: '0 9 * * *', timezone: 'UTC', input: { n: 1 } })).id;
    });

    it("answers another organization's workflow and schedules as if they did not exist", async () => {
      const as = bearer(other.admin);
      const calls: Array<[string, () => Promise<Response>]> = [
        ['list', () => t.http().get(path(workflowId)).set(as)],
        [
          'create',
          () =>
            t
              .http()
              .post(path(workflowId))
              .set(as)
              .send({ cron: '0 9 * * *', timezone: 'UTC', input: { n: 1 } }),
        ],
        ['get', () => t.http().get(path(workflowId, scheduleId)).set(as)],
        ['patch', () => t.http().patch(path(workflowId, scheduleId)).set(as).send({ cron: '0 10 * * *' })],
        ['delete', () => t.http().delete(path(workflowId, scheduleId)).set(as)],
        [
          'pause',
          () =>
            t
              .http()
              .post(path(workflowId, scheduleId, 'pause'))
              .set(as),
        ],
        [
          'resume',
          () =>
            t
              .http()
              .post(path(workflowId, scheduleId, 'resume'))
              .set(as),
        ],
        [
          'trigger',
          () =>
            t
              .http()
              .post(path(workflowId, scheduleId, 'trigger'))
              .set(as),
        ],
        [
          'occurrences',
          () =>
            t
              .http()
              .get(path(workflowId, scheduleId, 'occurrences'))
              .set(as),
        ],
      ];
      for (const [what, call] of calls) {
        const res = await call();
        expect({ what, status: res.status, code: res.body?.error?.code as unknown }).toEqual({
          what,
          status: 404,
          code: 'WORKFLOW_NOT_FOUND',
        });
      }
      // Their own workflow with our schedule's id: no such schedule.
      const theirs = await workflow(other);
      const res = await t.http().get(path(theirs, scheduleId)).set(as);
      expectError(res, 404, 'SCHEDULE_NOT_FOUND');
      expectError(await t.http().patch(path(theirs, scheduleId)).set(as).send({ cron: '0 10 * * *' }), 404, 'SCHEDULE_NOT_FOUND');
      expectError(await t.http().delete(path(theirs, scheduleId)).set(as), 404, 'SCHEDULE_NOT_FOUND');
      expectError(
        await t
          .http()
          .post(path(theirs, scheduleId, 'trigger'))
          .set(as),
        404,
        'SCHEDULE_NOT_FOUND',
      );
      expect(await runsOf(workflowId)).toEqual([]);
      expect((await get(workflowId, scheduleId)).body).toMatchObject({ cron: '0 9 * * *', enabled: true });
    });

    it('finds a schedule only under its own workflow; an unknown id is 404 SCHEDULE_NOT_FOUND', async () => {
      const sibling = await workflow();
      expectError(await get(sibling, scheduleId), 404, 'SCHEDULE_NOT_FOUND');
      expectError(
        await t
          .http()
          .post(path(sibling, scheduleId, 'trigger'))
          .set(bearer(org.admin)),
        404,
        'SCHEDULE_NOT_FOUND',
      );
      expectError(await get(workflowId, randomUUID()), 404, 'SCHEDULE_NOT_FOUND');
      expectError(await t.http().get(path(randomUUID())).set(bearer(org.viewer)), 404, 'WORKFLOW_NOT_FOUND');
      expectError(await create(randomUUID(), { cron: '0 9 * * *', timezone: 'UTC' }), 404, 'WORKFLOW_NOT_FOUND');
    });
  });

  describe('occurrences', () => {
    let workflowId: string;
    beforeAll(async () => {
      workflowId = await workflow();
    });

    it("answers the next fire times in UTC: '30 2 * * *' in Europe/Berlin is 02:30 Berlin time each day", async () => {
      const schedule = await created(workflowId, { cron: '30 2 * * *', timezone: 'Europe/Berlin', input: { n: 1 } });
      const before = Date.now();
      const times = await occurrences(workflowId, schedule.id);
      expect(times).toHaveLength(10);
      expect(times[0]).toBe(schedule.nextFireAt);
      const days = new Set<string>();
      let previous = before;
      for (const time of times) {
        expect(isIso(time)).toBe(true);
        const at = Date.parse(time);
        expect(at).toBeGreaterThan(previous);
        // One a day: 23, 24 or 25 hours apart.
        if (previous !== before) expect([23, 24, 25].map((h) => h * 60 * MINUTE)).toContain(at - previous);
        previous = at;
        const wall = local(time, 'Europe/Berlin');
        days.add(wall.date);
        expect({ time, wall: wall.time }).toEqual({ time, wall: isBerlinSpringForward(wall.date, wall.weekday) ? '03:30:00' : '02:30:00' });
      }
      expect(days.size).toBe(10);
      // Less than a day from now to the first.
      expect(Date.parse(times[0]) - before).toBeLessThanOrEqual(24 * 60 * MINUTE);

      expect(await occurrences(workflowId, schedule.id, '?count=3')).toEqual(times.slice(0, 3));
      expect(await occurrences(workflowId, schedule.id, '?count=1')).toEqual(times.slice(0, 1));
      const hundred = await occurrences(workflowId, schedule.id, '?count=100');
      expect(hundred).toHaveLength(100);
      expect(hundred.slice(0, 10)).toEqual(times);
      for (const time of hundred) {
        const wall = local(time, 'Europe/Berlin');
        expect({ time, wall: wall.time }).toEqual({ time, wall: isBerlinSpringForward(wall.date, wall.weekday) ? '03:30:00' : '02:30:00' });
      }
    });

    it('reads the cron in the time zone: the same cron in UTC and in Asia/Kolkata fires 5:30 h apart', async () => {
      const utc = await created(workflowId, { cron: '0 12 * * *', timezone: 'UTC', input: { n: 1 } });
      const india = await created(workflowId, { cron: '0 12 * * *', timezone: 'Asia/Kolkata', input: { n: 1 } });
      const [u, i] = [await occurrences(workflowId, utc.id, '?count=5'), await occurrences(workflowId, india.id, '?count=5')];
      for (const time of u) expect(time).toMatch(/T12:00:00\.000Z$/);
      for (const time of i) expect(time).toMatch(/T06:30:00\.000Z$/);
    });
  });

  describe('pause, resume, trigger', () => {
    let workflowId: string;
    beforeAll(async () => {
      workflowId = await workflow();
    });

    it('pauses (enabled false, no next fire time) and resumes (the next occurrence after now)', async () => {
      const schedule = await created(workflowId, { cron: '30 2 * * *', timezone: 'Europe/Berlin', input: { n: 1 } });
      const paused = await t
        .http()
        .post(path(workflowId, schedule.id, 'pause'))
        .set(bearer(org.admin));
      expect(paused.status).toBe(200);
      expect(paused.body).toEqual({ ...schedule, enabled: false, nextFireAt: null, updatedAt: isoString });
      expect((await get(workflowId, schedule.id)).body).toEqual(paused.body);

      const resumed = await t
        .http()
        .post(path(workflowId, schedule.id, 'resume'))
        .set(bearer(org.admin));
      expect(resumed.status).toBe(200);
      expect(resumed.body).toEqual({ ...schedule, enabled: true, nextFireAt: isoString, updatedAt: isoString });
      expect(resumed.body.nextFireAt).toBe((await occurrences(workflowId, schedule.id, '?count=1'))[0]);
      expect(Date.parse(resumed.body.nextFireAt)).toBeGreaterThan(Date.now());
      expect((await get(workflowId, schedule.id)).body).toEqual(resumed.body);
    });

    it('starts a run now: 202 {run} triggered by the schedule with its input, listed in the runs, paused or not', async () => {
      // A cron that does not come due during the test: this workflow's only runs are the triggered ones.
      const schedule = await created(workflowId, { cron: '0 0 1 1 *', timezone: 'UTC', input: { n: 21 } });
      const before = Date.now();
      const res = await t
        .http()
        .post(path(workflowId, schedule.id, 'trigger'))
        .set(bearer(org.admin));
      const after = Date.now();
      expect(res.status).toBe(202);
      const run = res.body as RunBody;
      expect(run).toMatchObject({
        id: expect.stringMatching(UUID),
        workflowId,
        input: { n: 21 },
        triggeredBy: { type: 'schedule', id: schedule.id, scheduledFor: isoString, person: org.admin.id },
      });
      expect(Object.keys(run.triggeredBy).sort()).toEqual(['id', 'person', 'scheduledFor', 'type']);
      const scheduledFor = Date.parse(run.triggeredBy.scheduledFor!);
      expect(scheduledFor).toBeGreaterThanOrEqual(before - 1000);
      expect(scheduledFor).toBeLessThanOrEqual(after + 1000);

      const finished = await eventually(
        async () => {
          const got = await t.http().get(`/api/workflows/${workflowId}/runs/${run.id}`).set(bearer(org.viewer));
          return ['succeeded', 'failed', 'canceled', 'timed_out'].includes(got.body.status as string) && (got.body as RunBody);
        },
        { timeoutMs: 20_000, intervalMs: 100, message: `run ${run.id} to finish` },
      );
      expect(finished).toMatchObject({ status: 'succeeded', output: 42, input: { n: 21 }, triggeredBy: run.triggeredBy });
      const listed = await runsOf(workflowId);
      expect(listed).toEqual([expect.objectContaining({ id: run.id, input: { n: 21 }, triggeredBy: run.triggeredBy })]);

      // Paused, it still starts a run by hand.
      await t
        .http()
        .post(path(workflowId, schedule.id, 'pause'))
        .set(bearer(org.admin))
        .expect(200);
      const again = await t
        .http()
        .post(path(workflowId, schedule.id, 'trigger'))
        .set(bearer(org.admin));
      expect(again.status).toBe(202);
      expect(again.body).toMatchObject({ input: { n: 21 }, triggeredBy: { type: 'schedule', id: schedule.id } });
      expect(again.body.id).not.toBe(run.id);
      expect((await runsOf(workflowId)).map((r) => r.id).sort()).toEqual([run.id, again.body.id].sort());
      expect((await get(workflowId, schedule.id)).body).toMatchObject({ enabled: false, nextFireAt: null });
    });
  });

  describe('firing on its own', () => {
    it("fires a '* * * * *' schedule once when it is due, within 5 s, with its input; a deleted workflow's schedule is gone and never fires", async () => {
      // Not in the last seconds of a minute: the doomed workflow is deleted before its schedule
      // comes due, and the schedule is paused before its next minute.
      if (Date.now() % MINUTE > 50_000) await new Promise((resolve) => setTimeout(resolve, MINUTE - (Date.now() % MINUTE) + 500));
      const workflowId = await workflow(org, 'every minute');
      const doomed = await workflow(org, 'deleted');
      const before = Date.now();
      const schedule = await created(workflowId, { cron: '* * * * *', timezone: 'UTC', input: { n: 7 }, overlap: 'allow' });
      const doomedSchedule = await created(doomed, { cron: '* * * * *', timezone: 'UTC', input: { n: 8 } });
      const after = Date.now();
      const next = Date.parse(schedule.nextFireAt!);
      expect(next % MINUTE).toBe(0);
      expect(next).toBeGreaterThan(before);
      expect(next).toBeLessThanOrEqual(after + MINUTE);

      // Deleting the workflow deletes its schedules.
      expect((await t.http().delete(`/api/workflows/${doomed}`).set(bearer(org.admin))).status).toBe(204);
      const gone = await get(doomed, doomedSchedule.id);
      expect(gone.status).toBe(404);
      expect(['WORKFLOW_NOT_FOUND', 'SCHEDULE_NOT_FOUND']).toContain(gone.body.error.code);
      const db = t.app.get(DataSource);
      const [{ count }] = await db.query<Array<{ count: string }>>('SELECT count(*)::text AS count FROM workflow_schedules WHERE id = $1', [
        doomedSchedule.id,
      ]);
      expect(count).toBe('0');

      // Rather than wait up to a minute: the schedule is made due now, at this minute's occurrence
      // (a cron time, less than a minute ago: on time), as if it had been created before it.
      const dueAt = Date.now();
      const [{ due }] = await db.query<Array<{ due: Date }>>(
        `WITH moved AS (UPDATE workflow_schedules SET next_fire_at = date_trunc('minute', now()) WHERE id = $1 RETURNING next_fire_at)
         SELECT next_fire_at AS due FROM moved`,
        [schedule.id],
      );
      const scheduledFor = new Date(due).toISOString();

      let seen: RunBody[] = [];
      const runs = await eventually(
        async () => {
          seen = await runsOf(workflowId);
          return seen.length > 0 && seen;
        },
        { timeoutMs: 10_000, intervalMs: 100, message: () => `the schedule to fire its occurrence of ${scheduledFor}` },
      );
      // Stop it before the next minute.
      const paused = await t
        .http()
        .post(path(workflowId, schedule.id, 'pause'))
        .set(bearer(org.admin));
      expect(paused.status).toBe(200);

      expect(runs).toHaveLength(1);
      const [run] = runs;
      expect(run).toMatchObject({
        workflowId,
        input: { n: 7 },
        triggeredBy: { type: 'schedule', id: schedule.id, scheduledFor },
      });
      expect(Date.parse(run.createdAt) - dueAt).toBeLessThanOrEqual(5_000);

      const finished = await eventually(
        async () => {
          const got = await t.http().get(`/api/workflows/${workflowId}/runs/${run.id}`).set(bearer(org.viewer));
          return got.body.status === 'succeeded' && (got.body as RunBody);
        },
        { timeoutMs: 20_000, intervalMs: 100, message: `run ${run.id} to succeed` },
      );
      expect(finished.output).toBe(14);

      const shown = (await get(workflowId, schedule.id)).body as Schedule;
      expect(shown).toMatchObject({ enabled: false, nextFireAt: null, lastFiredAt: scheduledFor });
      expect(shown.recent).toEqual([{ scheduledFor, outcome: 'started', runId: run.id, at: isoString }]);

      // Still one run, and none from the deleted workflow's schedule.
      expect(await runsOf(workflowId)).toHaveLength(1);
      expect(await runsOf(doomed)).toEqual([]);
    });
  });
});

describe("workflow schedules: the organization's quota", () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    t = await createTestApp({ env: { ORG_MAX_SCHEDULES: '3' } });
    [org, other] = [await t.newOrg('enterprise'), await t.newOrg('enterprise')];
    for (const owner of [org, other]) await install(t, owner, 'transform');
  });
  afterAll(async () => {
    await t.close();
  });

  const workflow = async (owner: TestOrg): Promise<string> => {
    const res = await t
      .http()
      .post('/api/workflows')
      .set(bearer(owner.admin))
      .send({ name: 'scheduled', steps: [{ id: 'a', ...jsonata('$') }] });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  const schedule = (owner: TestOrg, workflowId: string, minute: number) =>
    t
      .http()
      .post(`/api/workflows/${workflowId}/schedules`)
      .set(bearer(owner.admin))
      .send({ cron: `${minute} 6 * * *`, timezone: 'UTC' });

  it('counts schedules across all of its workflows: past ORG_MAX_SCHEDULES, 409 SCHEDULE_LIMIT_REACHED on any of them', async () => {
    const [first, second] = [await workflow(org), await workflow(org)];
    for (const [workflowId, minute] of [
      [first, 1],
      [first, 2],
      [second, 3],
    ] as const)
      expect((await schedule(org, workflowId, minute)).status).toBe(201);
    for (const workflowId of [first, second]) {
      const res = await schedule(org, workflowId, 4);
      expect(res.status).toBe(409);
      expect(res.body).toEqual({
        error: { code: 'SCHEDULE_LIMIT_REACHED', message: "The organization has used its 3 schedules (its tier's quota)", status: 409 },
      });
    }
    // Another organization has its own.
    expect((await schedule(other, await workflow(other), 1)).status).toBe(201);
    // A deleted schedule frees its place.
    const [victim] = (await t.http().get(`/api/workflows/${first}/schedules`).set(bearer(org.viewer))).body.data as Array<{ id: string }>;
    expect((await t.http().delete(`/api/workflows/${first}/schedules/${victim.id}`).set(bearer(org.admin))).status).toBe(204);
    expect((await schedule(org, second, 5)).status).toBe(201);
  });
});
