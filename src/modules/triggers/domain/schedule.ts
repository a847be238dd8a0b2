import { randomUUID } from 'node:crypto';
import { CronExpressionParser } from 'cron-parser';
import { DomainError } from '../../../shared/errors/domain-error';

export const OVERLAPS = ['skip', 'allow'] as const;
export type Overlap = (typeof OVERLAPS)[number];
export const CATCH_UPS = ['none', 'latest', 'all'] as const;
export type CatchUp = (typeof CATCH_UPS)[number];
export type OccurrenceOutcome = 'started' | 'skipped' | 'missed' | 'failed';

export const SCHEDULE_LIMITS = {
  perWorkflow: 20,
  /** Occurrences GET .../occurrences shows at most. */
  occurrences: 100,
  /** catchUp `all` runs at most this many of the missed occurrences (the latest). */
  catchUpAll: 10,
  /** Recorded occurrences a schedule shows (`recent`). */
  recent: 20,
  /** An occurrence claimed later than this after its time was missed (no worker ran). */
  lateMs: 60_000,
  /** Occurrences looked at in one claim at most (a schedule stopped for a long time). */
  scan: 10_000,
};

/** One recorded occurrence: what happened at it. */
export interface Occurrence {
  scheduledFor: Date;
  outcome: OccurrenceOutcome;
  runId: string | null;
  at: Date;
}

export interface ScheduleProps {
  id: string;
  organizationId: string;
  workflowId: string;
  /** Five fields: minute hour day-of-month month day-of-week, read in `timezone`. */
  cron: string;
  timezone: string;
  input: unknown;
  overlap: Overlap;
  catchUp: CatchUp;
  enabled: boolean;
  /** The first occurrence not yet handled; null while paused. */
  nextFireAt: Date | null;
  lastFiredAt: Date | null;
  lastRunId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What to do with the occurrences that are due when a worker claims the schedule. */
export interface FirePlan {
  /** Occurrences to start a run for, oldest first. */
  fire: Date[];
  /** Occurrences missed while no worker ran, that catch-up does not run. */
  missed: Date[];
  next: Date | null;
}

/** A cron expression and time zone that parse; else 400 naming the field. */
export function assertCron(cron: string, timezone: string): void {
  if (!isTimeZone(timezone)) throw invalid('timezone', `'${timezone}' is not an IANA time zone (e.g. Europe/Berlin)`);
  if (cron.trim().split(/\s+/).length !== 5) {
    throw invalid('cron', 'cron must have 5 fields: minute hour day-of-month month day-of-week');
  }
  try {
    // An expression that parses but never fires (no date matches) fails here too, not at the first claim.
    CronExpressionParser.parse(cron, { tz: timezone, strict: false }).next();
  } catch (error) {
    throw invalid('cron', `cron does not parse: ${(error as Error).message}`);
  }
}

/** The next `count` occurrences strictly after `after`. */
export function occurrencesAfter(cron: string, timezone: string, after: Date, count: number): Date[] {
  const times = CronExpressionParser.parse(cron, { tz: timezone, currentDate: after });
  return Array.from({ length: count }, () => times.next().toDate());
}

/**
 * `first` (an occurrence) and the occurrences after it up to `to` (included), oldest first, at
 * most `limit`. Counting on from an occurrence, not from just before it: an occurrence moved out
 * of a DST gap (02:30 -> 03:30) is only found when counting from before the gap.
 */
export function occurrencesFrom(cron: string, timezone: string, first: Date, to: Date, limit: number): Date[] {
  if (first > to) return [];
  const times = CronExpressionParser.parse(cron, { tz: timezone, currentDate: first });
  const found: Date[] = [first];
  while (found.length < limit) {
    const next = times.next().toDate();
    if (next > to) break;
    found.push(next);
  }
  return found;
}

/** A workflow's clock: runs at the occurrences of a cron expression in a time zone. */
export class Schedule {
  private constructor(private props: ScheduleProps) {}

  static create(
    input: {
      organizationId: string;
      workflowId: string;
      cron: string;
      timezone: string;
      input?: unknown;
      overlap?: Overlap;
      catchUp?: CatchUp;
      enabled?: boolean;
    },
    now = new Date(),
  ): Schedule {
    assertCron(input.cron, input.timezone);
    const enabled = input.enabled ?? true;
    return new Schedule({
      id: randomUUID(),
      organizationId: input.organizationId,
      workflowId: input.workflowId,
      cron: input.cron.trim(),
      timezone: input.timezone,
      input: input.input ?? null,
      overlap: input.overlap ?? 'skip',
      catchUp: input.catchUp ?? 'latest',
      enabled,
      nextFireAt: enabled ? occurrencesAfter(input.cron, input.timezone, now, 1)[0] : null,
      lastFiredAt: null,
      lastRunId: null,
      createdAt: now,
      updatedAt: now,
    });
  }

  static rehydrate(props: ScheduleProps): Schedule {
    return new Schedule({ ...props });
  }

  get id() {
    return this.props.id;
  }
  get organizationId() {
    return this.props.organizationId;
  }
  get workflowId() {
    return this.props.workflowId;
  }
  get input() {
    return this.props.input;
  }
  get overlap() {
    return this.props.overlap;
  }
  get lastRunId() {
    return this.props.lastRunId;
  }

  /** A change of the cron, time zone or `enabled` starts counting from now. */
  change(
    patch: { cron?: string; timezone?: string; input?: unknown; overlap?: Overlap; catchUp?: CatchUp; enabled?: boolean },
    now = new Date(),
  ): void {
    const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<ScheduleProps>;
    const next = { ...this.props, ...defined, updatedAt: now };
    if (patch.cron !== undefined || patch.timezone !== undefined) assertCron(next.cron, next.timezone);
    next.cron = next.cron.trim();
    if (patch.cron !== undefined || patch.timezone !== undefined || patch.enabled !== undefined) {
      next.nextFireAt = next.enabled ? occurrencesAfter(next.cron, next.timezone, now, 1)[0] : null;
    }
    this.props = next;
  }

  /** The next occurrences from now, as a user would see them. */
  upcoming(count: number, now = new Date()): Date[] {
    return occurrencesAfter(this.props.cron, this.props.timezone, now, count);
  }

  /**
   * The occurrences due at `now`: those on time fire; those missed while no worker ran follow
   * `catchUp` (none: all missed; latest: the latest fires unless one on time does; all: the
   * latest few fire). The schedule then waits for the first occurrence after `now`.
   */
  plan(now: Date): FirePlan {
    const { nextFireAt, cron, timezone, catchUp, enabled } = this.props;
    if (!enabled || !nextFireAt || nextFireAt > now) return { fire: [], missed: [], next: nextFireAt };
    const due = occurrencesFrom(cron, timezone, nextFireAt, now, SCHEDULE_LIMITS.scan);
    const onTime = due.filter((t) => now.getTime() - t.getTime() <= SCHEDULE_LIMITS.lateMs);
    const late = due.filter((t) => now.getTime() - t.getTime() > SCHEDULE_LIMITS.lateMs);
    let caughtUp: Date[] = [];
    if (catchUp === 'latest' && !onTime.length) caughtUp = late.slice(-1);
    if (catchUp === 'all') caughtUp = late.slice(-SCHEDULE_LIMITS.catchUpAll);
    return {
      fire: [...caughtUp, ...onTime],
      missed: late.filter((t) => !caughtUp.includes(t)),
      next: occurrencesAfter(cron, timezone, now, 1)[0],
    };
  }

  /** After a claim: the plan's next occurrence, and the run started last (if any). */
  advance(plan: FirePlan, lastRunId: string | null, now = new Date()): void {
    this.props = {
      ...this.props,
      nextFireAt: plan.next,
      lastFiredAt: plan.fire.length ? plan.fire[plan.fire.length - 1] : this.props.lastFiredAt,
      lastRunId: lastRunId ?? this.props.lastRunId,
      updatedAt: now,
    };
  }

  toProps(): ScheduleProps {
    return { ...this.props };
  }
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return zone.includes('/') || zone === 'UTC';
  } catch {
    return false;
  }
}

function invalid(path: string, message: string): DomainError {
  return new DomainError('VALIDATION_FAILED', message, [{ path, message }]);
}
