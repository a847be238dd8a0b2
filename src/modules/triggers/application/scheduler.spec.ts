import { inlineTransactions } from '../../../../test/support/inline-transactions';
import { AppConfig } from '../../../config/app-config';
import { Submitted } from '../../../queue/durable-jobs';
import { DomainError } from '../../../shared/errors/domain-error';
import { EventOutbox, PlatformEvent } from '../../../shared/events/event-outbox';
import { Metrics } from '../../../shared/metrics/metrics';
import { Page } from '../../../shared/pagination/cursor';
import { Run } from '../../runs/domain/run';
import { Occurrence, Schedule } from '../domain/schedule';
import { ScheduleRepository } from '../domain/schedule.repository';
import { RunRepository } from '../../runs/domain/run.repository';
import { WorkflowRepository } from '../../workflows/domain/workflow.repository';
import { RunRequest, RunsService } from '../../runs/application/runs.service';
import { Scheduler } from './scheduler';

/**
 * Schedules in memory; a claim takes the organization's earliest due one (the SQL's ORDER BY
 * next_fire_at) that no other claim holds, and holds it until it is written back or deleted (SKIP LOCKED, with the
 * lock ending where the scheduler's transaction does).
 */
class InMemorySchedules extends ScheduleRepository {
  readonly rows = new Map<string, Schedule>();
  readonly recorded: Array<Occurrence & { scheduleId: string }> = [];
  private readonly held = new Set<string>();

  async insert(s: Schedule) {
    this.rows.set(s.id, Schedule.rehydrate(s.toProps()));
  }
  async update(s: Schedule) {
    this.rows.set(s.id, Schedule.rehydrate(s.toProps()));
    this.held.delete(s.id);
  }
  async find(_o: string, _w: string, id: string) {
    return this.rows.get(id) ?? null;
  }
  async list(): Promise<Page<Schedule>> {
    return { data: [...this.rows.values()], nextCursor: null };
  }
  async countForCreate() {
    return { workflow: this.rows.size, organization: this.rows.size };
  }
  async delete(_o: string, _w: string, id: string) {
    this.held.delete(id);
    return this.rows.delete(id);
  }
  async deleteOfWorkflow() {}
  async dueOrganizations(now: Date, limit: number) {
    const due = this.due(now).map((p) => p.organizationId);
    return [...new Set(due)].slice(0, limit);
  }
  async claimDue(now: Date, organizationId: string) {
    const due = this.due(now)
      .filter((p) => p.organizationId === organizationId && !this.held.has(p.id))
      .sort((a, b) => a.nextFireAt!.getTime() - b.nextFireAt!.getTime());
    if (!due.length) return null;
    this.held.add(due[0].id);
    return Schedule.rehydrate(due[0]);
  }
  private due(now: Date) {
    return [...this.rows.values()].map((s) => s.toProps()).filter((p) => p.enabled && p.nextFireAt && p.nextFireAt <= now);
  }
  async record(s: Schedule, occurrences: Occurrence[]) {
    this.recorded.push(...occurrences.map((o) => ({ ...o, scheduleId: s.id })));
  }
  async recent() {
    return [];
  }
}

/** Runs as RunsService enqueues them; `failFor` makes one workflow's enqueue throw like a lost database. */
class RecordingRuns {
  readonly started: RunRequest[] = [];
  failFor?: string;

  async enqueue(_organizationId: string, request: Omit<RunRequest, 'waitSeconds'>): Promise<Submitted<Run>> {
    if (request.workflowId === this.failFor) throw new Error('connection reset');
    this.started.push({ ...request, waitSeconds: 0 });
    return { record: { id: `run-${this.started.length}`, status: 'queued' } as Run, created: true };
  }
  async settle(submitted: Submitted<Run>) {
    return submitted.record;
  }
}

class RecordingOutbox extends EventOutbox {
  readonly events: PlatformEvent[] = [];
  async publish(events: PlatformEvent[]) {
    this.events.push(...events);
  }
  committed() {}
}

const T0 = new Date('2027-01-01T00:00:30Z');
const at = (iso: string) => () => new Date(iso);

describe('Scheduler', () => {
  let schedules: InMemorySchedules;
  let runs: RecordingRuns;
  let outbox: RecordingOutbox;
  let runStatus: string | null;
  let deletedWorkflows: Set<string>;
  let scheduler: Scheduler;

  beforeEach(() => {
    schedules = new InMemorySchedules();
    runs = new RecordingRuns();
    outbox = new RecordingOutbox();
    runStatus = null;
    deletedWorkflows = new Set();
    const workflows = {
      find: async (_o: string, id: string) => (deletedWorkflows.has(id) ? null : { id }),
    } as unknown as WorkflowRepository;
    const runRows = { findById: async (id: string) => (runStatus ? { id, status: runStatus } : null) } as unknown as RunRepository;
    scheduler = new Scheduler(
      { runsWorker: true } as AppConfig,
      schedules,
      workflows,
      runRows,
      runs as unknown as RunsService,
      outbox,
      inlineTransactions() as never,
      new Metrics(),
    );
  });

  async function add(workflowId: string, more: Partial<Parameters<typeof Schedule.create>[0]> = {}) {
    const s = Schedule.create({ organizationId: 'o', workflowId, cron: '* * * * *', timezone: 'UTC', input: { n: 1 }, ...more }, T0);
    await schedules.insert(s);
    return s;
  }

  it('starts one run per occurrence, with the idempotency key and trigger of the occurrence, however often it ticks', async () => {
    const s = await add('w1');
    await scheduler.tick(at('2027-01-01T00:01:01Z'));
    await scheduler.tick(at('2027-01-01T00:01:02Z'));
    expect(runs.started).toEqual([
      {
        workflowId: 'w1',
        input: { n: 1 },
        waitSeconds: 0,
        idempotencyKey: `schedule:${s.id}:2027-01-01T00:01:00.000Z`,
        triggeredBy: { type: 'schedule', id: s.id, scheduledFor: '2027-01-01T00:01:00.000Z' },
      },
    ]);
    expect(schedules.rows.get(s.id)!.toProps()).toMatchObject({ nextFireAt: new Date('2027-01-01T00:02:00Z'), lastRunId: 'run-1' });
    expect(schedules.recorded).toEqual([expect.objectContaining({ outcome: 'started', runId: 'run-1' })]);
  });

  it('fires each of many schedules due at once exactly once with its claimers side by side', async () => {
    const due = await Promise.all(Array.from({ length: 30 }, (_, i) => add(`w${i}`)));
    await Promise.all([scheduler.tick(at('2027-01-01T00:01:01Z')), scheduler.tick(at('2027-01-01T00:01:01Z'))]);
    expect(runs.started.map((r) => r.workflowId).sort()).toEqual(due.map((s) => s.workflowId).sort());
    expect(schedules.recorded.map((o) => o.outcome)).toEqual(Array(30).fill('started'));
    for (const s of due) expect(schedules.rows.get(s.id)!.toProps().nextFireAt).toEqual(new Date('2027-01-01T00:02:00Z'));
  });

  it('lets organizations take turns: one with many schedules due does not fire before all of another', async () => {
    await Promise.all(Array.from({ length: 40 }, (_, i) => add(`busy${i}`, { organizationId: 'busy' })));
    await add('quiet', { organizationId: 'quiet' });
    await scheduler.tick(at('2027-01-01T00:01:01Z'));
    expect(runs.started).toHaveLength(41);
    // Four claimers take an organization each in turn: the quiet one's is among the first claims.
    expect(runs.started.findIndex((r) => r.workflowId === 'quiet')).toBeLessThan(4);
  });

  it('waits for the next tick when the due schedules cannot be read (the database is away), without throwing', async () => {
    await add('w1');
    schedules.dueOrganizations = () => Promise.reject(new Error('Connection terminated unexpectedly'));
    await expect(scheduler.tick(at('2027-01-01T00:01:01Z'))).resolves.toBeUndefined();
    expect(runs.started).toEqual([]);
  });

  it("skips an occurrence while the schedule's previous run is still going, and says so with an event", async () => {
    const s = await add('w1');
    await scheduler.tick(at('2027-01-01T00:01:01Z'));
    runStatus = 'running';
    await scheduler.tick(at('2027-01-01T00:02:01Z'));
    expect(runs.started).toHaveLength(1);
    expect(schedules.recorded.map((o) => o.outcome)).toEqual(['started', 'skipped']);
    expect(outbox.events).toEqual([
      {
        organizationId: 'o',
        type: 'workflow.schedule.skipped',
        data: { scheduleId: s.id, workflowId: 'w1', scheduledFor: '2027-01-01T00:02:00.000Z' },
      },
    ]);
  });

  it('sets aside a schedule whose claim fails, so that the others still fire', async () => {
    const broken = await add('broken');
    const fine = await add('fine', { cron: '*/2 * * * *' });
    runs.failFor = 'broken';
    await scheduler.tick(at('2027-01-01T00:02:01Z'));
    expect(runs.started.map((r) => r.workflowId)).toEqual(['fine']);
    expect(schedules.recorded.filter((o) => o.scheduleId === broken.id).map((o) => o.outcome)).toEqual(['failed', 'failed']);
    expect(schedules.rows.get(broken.id)!.toProps().nextFireAt).toEqual(new Date('2027-01-01T00:03:00Z'));
    expect(schedules.rows.get(fine.id)!.toProps().lastRunId).toBe('run-1');
  });

  it('records a failed occurrence when the workflow refuses the input, and deletes the schedule of a deleted workflow', async () => {
    const refused = await add('w1');
    runs.enqueue = async () => {
      throw new DomainError('VALIDATION_FAILED', 'input does not fit');
    };
    await scheduler.tick(at('2027-01-01T00:01:01Z'));
    expect(schedules.recorded).toEqual([expect.objectContaining({ scheduleId: refused.id, outcome: 'failed', runId: null })]);

    const orphan = await add('gone');
    deletedWorkflows.add('gone');
    await scheduler.tick(at('2027-01-01T00:02:01Z'));
    expect(schedules.rows.has(orphan.id)).toBe(false);
  });
});
