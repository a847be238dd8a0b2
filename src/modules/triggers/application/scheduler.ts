import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Counter } from 'prom-client';
import { AppConfig } from '../../../config/app-config';
import { Submitted } from '../../../queue/durable-jobs';
import { DomainError } from '../../../shared/errors/domain-error';
import { EventOutbox, PlatformEvent } from '../../../shared/events/event-outbox';
import { Metrics } from '../../../shared/metrics/metrics';
import { Run } from '../../runs/domain/run';
import { Occurrence, Schedule } from '../domain/schedule';
import { ScheduleRepository } from '../domain/schedule.repository';
import { RunRepository } from '../../runs/domain/run.repository';
import { WorkflowRepository } from '../../workflows/domain/workflow.repository';
import { RunsService } from '../../runs/application/runs.service';

/** How often worker processes look for due schedules: runs start within a few seconds of their time. */
const TICK_MS = 1000;
/** Schedules claimed in one tick at most. */
const CLAIMS_PER_TICK = 100;
/** Organizations served in one tick at most (the rest are first in the next). */
const ORGANIZATIONS_PER_TICK = 1000;
/**
 * Claims made side by side in a tick. Each claim is a transaction on a connection of its own and
 * SKIP LOCKED keeps them apart, so a minute with many schedules due is not fired one commit after
 * another (on PGlite, with its one connection, they still take turns).
 */
const CLAIMERS = 4;

interface Claimed {
  runs: Array<Submitted<Run>>;
  published: boolean;
}

/**
 * Fires schedules on worker processes. Each due schedule is claimed in its own transaction with
 * FOR UPDATE SKIP LOCKED: the runs of its due occurrences are created, what happened at each is
 * recorded (with `workflow.schedule.skipped|missed` events) and the next fire time is written,
 * all in that transaction, so any number of claimers, in any number of instances, fire each
 * occurrence once. Organizations with schedules due take turns, one claim each, so one with
 * hundreds due at the same minute does not make another's fire late.
 */
@Injectable()
export class Scheduler implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Scheduler');
  private timer?: NodeJS.Timeout;
  private ticking?: Promise<void>;
  private readonly occurrences: Counter<'outcome'>;

  constructor(
    private readonly config: AppConfig,
    private readonly schedules: ScheduleRepository,
    private readonly workflows: WorkflowRepository,
    private readonly runRows: RunRepository,
    private readonly runs: RunsService,
    private readonly outbox: EventOutbox,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    metrics: Metrics,
  ) {
    this.occurrences = new Counter({
      name: 'workflow_schedule_occurrences_total',
      help: 'Occurrences of workflow schedules handled, by outcome (started, skipped, missed, failed)',
      labelNames: ['outcome'],
      registers: [metrics.registry],
    });
  }

  onApplicationBootstrap(): void {
    if (!this.config.runsWorker) return;
    this.timer = setInterval(() => {
      this.ticking ??= this.tick().finally(() => (this.ticking = undefined));
    }, TICK_MS);
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.ticking;
  }

  /**
   * Claims due schedules with CLAIMERS side by side until none is left (or the tick's share is
   * used), the organizations with schedules due taking turns.
   */
  async tick(now: () => Date = () => new Date()): Promise<void> {
    let turns: string[];
    try {
      turns = await this.schedules.dueOrganizations(now(), ORGANIZATIONS_PER_TICK);
    } catch (error) {
      // The database is away: the next tick looks again.
      this.logger.warn(`Due schedules not read this time: ${(error as Error).message}`);
      return;
    }
    const budget = { claims: CLAIMS_PER_TICK };
    await Promise.all(Array.from({ length: CLAIMERS }, () => this.claimInTurns(now, turns, budget)));
  }

  /**
   * Claims one due schedule of the organization whose turn it is, over and over, within the
   * tick's budget (shared by the claimers, as are the turns); an organization with none left
   * (or none another claimer does not hold) leaves the turns.
   */
  private async claimInTurns(now: () => Date, turns: string[], budget: { claims: number }): Promise<void> {
    while (turns.length && budget.claims > 0) {
      budget.claims--;
      const organizationId = turns.shift()!;
      turns.push(organizationId);
      if (await this.claimNext(now, organizationId)) continue;
      const at = turns.indexOf(organizationId);
      if (at >= 0) turns.splice(at, 1);
    }
  }

  /** Claims and fires one due schedule of the organization; false when it has none (or its claims fail). */
  private async claimNext(now: () => Date, organizationId: string): Promise<boolean> {
    let holding: Schedule | null = null;
    try {
      const claimed = await this.txHost.withTransaction(() =>
        this.claimOne(now(), organizationId, (schedule) => {
          holding = schedule;
        }),
      );
      if (!claimed) return false;
      if (claimed.published) this.outbox.committed();
      for (const run of claimed.runs) await this.runs.settle(run, 0);
      return true;
    } catch (error) {
      this.logger.warn(`Schedule ${(holding as Schedule | null)?.id ?? '(none claimed)'} not fired this time: ${(error as Error).message}`);
      // A schedule whose claim keeps failing must not hold up the others: its due occurrences
      // are recorded as failed and it waits for its next one.
      return holding !== null && (await this.setAside(holding, now()));
    }
  }

  /** Records the due occurrences of a schedule that could not be fired as failed, and moves it on. */
  private async setAside(schedule: Schedule, now: Date): Promise<boolean> {
    try {
      await this.txHost.withTransaction(async () => {
        const plan = schedule.plan(now);
        const due = [...plan.missed, ...plan.fire];
        await this.schedules.record(
          schedule,
          due.map((scheduledFor) => ({ scheduledFor, outcome: 'failed', runId: null, at: now })),
        );
        this.occurrences.inc({ outcome: 'failed' }, due.length);
        schedule.advance({ ...plan, fire: [] }, null, now);
        await this.schedules.update(schedule);
      });
      return true;
    } catch (error) {
      this.logger.warn(`Schedule ${schedule.id} not set aside: ${(error as Error).message}`);
      return false;
    }
  }

  private async claimOne(now: Date, organizationId: string, claimed: (schedule: Schedule) => void): Promise<Claimed | null> {
    const schedule = await this.schedules.claimDue(now, organizationId);
    if (!schedule) return null;
    claimed(schedule);
    // A schedule of a deleted workflow stops at once.
    if (!(await this.workflows.find(schedule.organizationId, schedule.workflowId))) {
      await this.schedules.delete(schedule.organizationId, schedule.workflowId, schedule.id);
      return { runs: [], published: false };
    }
    const plan = schedule.plan(now);
    const occurrences: Occurrence[] = plan.missed.map((scheduledFor) => ({ scheduledFor, outcome: 'missed', runId: null, at: now }));
    const busy = schedule.overlap === 'skip' && (await this.previousRunUnfinished(schedule));
    const runs: Array<Submitted<Run>> = [];
    for (const scheduledFor of plan.fire) {
      if (busy) {
        occurrences.push({ scheduledFor, outcome: 'skipped', runId: null, at: now });
        continue;
      }
      const started = await this.start(schedule, scheduledFor);
      if (started) runs.push(started);
      occurrences.push({ scheduledFor, outcome: started ? 'started' : 'failed', runId: started?.record.id ?? null, at: now });
    }
    await this.schedules.record(schedule, occurrences);
    for (const o of occurrences) this.occurrences.inc({ outcome: o.outcome });
    const events = occurrences.flatMap((o) => (o.outcome === 'skipped' || o.outcome === 'missed' ? [event(schedule, o)] : []));
    if (events.length) await this.outbox.publish(events);
    schedule.advance(plan, runs.length ? runs[runs.length - 1].record.id : null, now);
    await this.schedules.update(schedule);
    return { runs, published: events.length > 0 };
  }

  /** The run of one occurrence, or null when the workflow refuses it (its input no longer fits the inputSchema). */
  private async start(schedule: Schedule, scheduledFor: Date): Promise<Submitted<Run> | null> {
    const at = scheduledFor.toISOString();
    try {
      return await this.runs.enqueue(schedule.organizationId, {
        workflowId: schedule.workflowId,
        input: schedule.input,
        idempotencyKey: `schedule:${schedule.id}:${at}`,
        triggeredBy: { type: 'schedule', id: schedule.id, scheduledFor: at },
      });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      this.logger.warn(`Schedule ${schedule.id} did not start a run for ${at}: ${error.message}`);
      return null;
    }
  }

  private async previousRunUnfinished(schedule: Schedule): Promise<boolean> {
    if (!schedule.lastRunId) return false;
    const previous = await this.runRows.findById(schedule.lastRunId);
    return previous !== null && (previous.status === 'queued' || previous.status === 'running');
  }
}

function event(schedule: Schedule, occurrence: Occurrence): PlatformEvent {
  return {
    organizationId: schedule.organizationId,
    type: `workflow.schedule.${occurrence.outcome}`,
    data: { scheduleId: schedule.id, workflowId: schedule.workflowId, scheduledFor: occurrence.scheduledFor.toISOString() },
  };
}
