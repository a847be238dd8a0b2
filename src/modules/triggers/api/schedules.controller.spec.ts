import { randomUUID } from 'node:crypto';
import { caller, controllerHarness, ControllerHarness, ORGANIZATION_ID } from '../../../../test/support/controller-harness';
import { expectError } from '../../../../test/support/envelope';
import type { Principal } from '../../../shared/auth/principal';
import type { Scope } from '../../../shared/auth/scopes';
import { ScheduleDetail, SchedulesService } from '../application/schedules.service';
import type { Run } from '../../runs/domain/run';
import { Schedule } from '../domain/schedule';
import { SchedulesController } from './schedules.controller';

/**
 * The HTTP contract of /api/workflows/:id/schedules on its own: who may call each route (roles,
 * API-key scopes) and what the request validation refuses before the service is asked. The
 * service is a fake that records its calls; schedules themselves, tenant isolation and firing
 * are in test/schedules.e2e-spec.ts.
 */
class FakeSchedules {
  readonly calls: string[] = [];

  private detail(workflowId: string): ScheduleDetail {
    const schedule = Schedule.create({ organizationId: ORGANIZATION_ID, workflowId, cron: '0 9 * * *', timezone: 'UTC' });
    return { schedule, recent: [] };
  }

  create = async (_caller: Principal, workflowId: string) => this.called('create', this.detail(workflowId));
  list = async () => this.called('list', { data: [], nextCursor: null });
  get = async (_caller: Principal, workflowId: string) => this.called('get', this.detail(workflowId));
  update = async (_caller: Principal, workflowId: string, _id: string, fields: { enabled?: boolean }) =>
    this.called(fields.enabled === undefined ? 'update' : fields.enabled ? 'resume' : 'pause', this.detail(workflowId));
  delete = async () => this.called('delete', undefined);
  occurrences = async () => this.called('occurrences', [new Date('2026-01-01T09:00:00Z')]);
  trigger = async (_caller: Principal, workflowId: string): Promise<Run> =>
    this.called('trigger', {
      id: randomUUID(),
      organizationId: ORGANIZATION_ID,
      workflowId,
      workflowVersion: 1,
      status: 'queued',
      input: null,
      output: null,
      error: null,
      attempts: 0,
      timeoutMs: 60_000,
      jobId: null,
      triggeredBy: { type: 'schedule', id: randomUUID(), scheduledFor: new Date() },
      createdAt: new Date(),
      startedAt: null,
      finishedAt: null,
      steps: [],
    } as unknown as Run);

  private called<T>(route: string, answer: T): T {
    this.calls.push(route);
    return answer;
  }
}

const WORKFLOW = randomUUID();
const SCHEDULE = randomUUID();
const base = `/api/workflows/${WORKFLOW}/schedules`;
const validBody = { cron: '0 9 * * *', timezone: 'UTC', input: { n: 1 } };

/** Every route: its service call, and how to make the request. */
const ROUTES = {
  list: (h: ReturnType<ControllerHarness['http']>) => h.get(base),
  get: (h: ReturnType<ControllerHarness['http']>) => h.get(`${base}/${SCHEDULE}`),
  occurrences: (h: ReturnType<ControllerHarness['http']>) => h.get(`${base}/${SCHEDULE}/occurrences`),
  create: (h: ReturnType<ControllerHarness['http']>) => h.post(base).send(validBody),
  update: (h: ReturnType<ControllerHarness['http']>) => h.patch(`${base}/${SCHEDULE}`).send({ cron: '0 10 * * *' }),
  delete: (h: ReturnType<ControllerHarness['http']>) => h.delete(`${base}/${SCHEDULE}`),
  pause: (h: ReturnType<ControllerHarness['http']>) => h.post(`${base}/${SCHEDULE}/pause`),
  resume: (h: ReturnType<ControllerHarness['http']>) => h.post(`${base}/${SCHEDULE}/resume`),
  trigger: (h: ReturnType<ControllerHarness['http']>) => h.post(`${base}/${SCHEDULE}/trigger`),
};
type RouteName = keyof typeof ROUTES;
const READS: RouteName[] = ['list', 'get', 'occurrences'];
const WRITES: RouteName[] = ['create', 'update', 'delete', 'pause', 'resume'];
const SUCCESS: Record<RouteName, number> = {
  list: 200,
  get: 200,
  occurrences: 200,
  create: 201,
  update: 200,
  delete: 204,
  pause: 200,
  resume: 200,
  trigger: 202,
};

describe('SchedulesController', () => {
  let harness: ControllerHarness;
  let schedules: FakeSchedules;

  beforeAll(async () => {
    schedules = new FakeSchedules();
    harness = await controllerHarness([SchedulesController], [{ provide: SchedulesService, useValue: schedules }]);
  });
  afterAll(() => harness.close());
  beforeEach(() => schedules.calls.splice(0));

  /** The status of each route for `who`, and the service calls they made. */
  async function tryAll(who: Principal | undefined, routes: RouteName[]) {
    const statuses: Partial<Record<RouteName, number>> = {};
    for (const route of routes) {
      const res = await ROUTES[route](harness.http(who));
      statuses[route] = res.status;
      if (res.status >= 400) expectError(res, res.status, res.status === 401 ? 'UNAUTHORIZED' : 'FORBIDDEN');
    }
    return { statuses, calls: [...schedules.calls] };
  }
  const all = Object.keys(ROUTES) as RouteName[];
  const expected = (allowed: RouteName[], refusedWith: number) =>
    Object.fromEntries(all.map((route) => [route, allowed.includes(route) ? SUCCESS[route] : refusedWith]));

  describe('roles', () => {
    it('lets an admin call every route', async () => {
      const { statuses, calls } = await tryAll(caller('admin'), all);
      expect(statuses).toEqual(expected(all, 403));
      expect(calls).toEqual(all);
    });

    it('lets a member read and trigger, and refuses every write with 403 before the service is asked', async () => {
      const { statuses, calls } = await tryAll(caller('member'), all);
      expect(statuses).toEqual(expected([...READS, 'trigger'], 403));
      expect(calls).toEqual([...READS, 'trigger']);
    });

    it('lets a viewer read only', async () => {
      const { statuses, calls } = await tryAll(caller('viewer'), all);
      expect(statuses).toEqual(expected(READS, 403));
      expect(calls).toEqual(READS);
    });

    it('answers 401 to a request without a caller, on every route', async () => {
      const { statuses, calls } = await tryAll(undefined, all);
      expect(statuses).toEqual(expected([], 401));
      expect(calls).toEqual([]);
    });
  });

  describe('API-key scopes', () => {
    const keyWith = (scopes: Scope[]) => caller('admin', { scopes });

    it.each<[string, Scope[], RouteName[]]>([
      ['workflows:read reads only', ['workflows:read'], READS],
      ['workflows:write adds the writes, not the trigger', ['workflows:read', 'workflows:write'], [...READS, ...WRITES]],
      ['workflows:run triggers only', ['workflows:run'], ['trigger']],
    ])('%s', async (_what, scopes, allowed) => {
      const { statuses, calls } = await tryAll(keyWith(scopes), all);
      expect(statuses).toEqual(expected(allowed, 403));
      expect(calls).toEqual(all.filter((route) => allowed.includes(route)));
    });

    it('names the missing scope in the refusal', async () => {
      const res = await ROUTES.trigger(harness.http(keyWith(['workflows:read', 'workflows:write'])));
      expectError(res, 403, 'FORBIDDEN');
      expect(res.body.error.message).toContain("'workflows:run'");
    });

    it('lets a key without scopes do what its role allows', async () => {
      const { statuses } = await tryAll(caller('member', { scopes: null }), all);
      expect(statuses).toEqual(expected([...READS, 'trigger'], 403));
    });
  });

  describe('request validation, before the service is asked', () => {
    it.each([
      ['no cron', { cron: undefined }, 'cron'],
      ['a cron that is not a string', { cron: 5 }, 'cron'],
      ['a cron over 200 characters', { cron: '*'.repeat(201) }, 'cron'],
      ['no time zone', { timezone: undefined }, 'timezone'],
      ['an unknown overlap', { overlap: 'never' }, 'overlap'],
      ['an unknown catchUp', { catchUp: 'sometimes' }, 'catchUp'],
      ['enabled that is not a boolean', { enabled: 'yes' }, 'enabled'],
      ['a field the API does not have', { priority: 1 }, 'priority'],
    ])('refuses a create with %s: 400 VALIDATION_FAILED naming the field', async (_what, change, field) => {
      const body: Record<string, unknown> = { ...validBody, ...change };
      for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key];
      expectError(await harness.http(caller('admin')).post(base).send(body), 400, 'VALIDATION_FAILED', field);
      expect(schedules.calls).toEqual([]);
    });

    it.each([
      ['an unknown overlap', { overlap: 'sometimes' }, 'overlap'],
      ['an unknown catchUp', { catchUp: 'never' }, 'catchUp'],
      ['a cron that is not a string', { cron: ['0 9 * * *'] }, 'cron'],
    ])('refuses a PATCH with %s', async (_what, change, field) => {
      expectError(await harness.http(caller('admin')).patch(`${base}/${SCHEDULE}`).send(change), 400, 'VALIDATION_FAILED', field);
      expect(schedules.calls).toEqual([]);
    });

    it.each(['0', '101', '-1', 'ten'])('bounds occurrences?count to 1..100: %s is 400', async (count) => {
      expectError(await harness.http(caller('viewer')).get(`${base}/${SCHEDULE}/occurrences?count=${count}`), 400, 'VALIDATION_FAILED');
      expect(schedules.calls).toEqual([]);
    });

    it('refuses ids that are not UUIDs with 400, on the workflow and the schedule', async () => {
      expectError(await harness.http(caller('admin')).get('/api/workflows/nope/schedules'), 400, 'VALIDATION_FAILED');
      expectError(await harness.http(caller('admin')).get(`${base}/nope`), 400, 'VALIDATION_FAILED');
      expect(schedules.calls).toEqual([]);
    });
  });

  it('answers a created schedule with 201 and its Location', async () => {
    const res = await ROUTES.create(harness.http(caller('admin')));
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`${base}/${res.body.id as string}`);
    expect(res.body).toMatchObject({ workflowId: WORKFLOW, cron: '0 9 * * *', timezone: 'UTC', enabled: true, recent: [] });
  });
});
