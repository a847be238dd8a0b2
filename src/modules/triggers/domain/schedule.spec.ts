import { DomainError } from '../../../shared/errors/domain-error';
import { assertCron, Schedule } from './schedule';

const berlin = (date: Date) =>
  new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', dateStyle: 'short', timeStyle: 'short', hour12: false }).format(date);

function schedule(cron: string, timezone: string, now: Date, more: { catchUp?: 'none' | 'latest' | 'all' } = {}) {
  return Schedule.create({ organizationId: 'o', workflowId: 'w', cron, timezone, ...more }, now);
}

/** Claims the schedule at each of `times` as a worker would, and returns every occurrence it fired. */
function fireAt(s: Schedule, times: Date[]): Date[] {
  const fired: Date[] = [];
  for (const now of times) {
    const plan = s.plan(now);
    fired.push(...plan.fire);
    s.advance(plan, null, now);
  }
  return fired;
}

const everyMinuteBetween = (from: string, to: string) => {
  const times: Date[] = [];
  for (let t = Date.parse(from); t <= Date.parse(to); t += 60_000) times.push(new Date(t + 2_000));
  return times;
};

describe('schedules', () => {
  it('refuses cron expressions without five fields or that do not parse, and zones that do not exist, naming the field', () => {
    const path = (work: () => void) => {
      try {
        work();
      } catch (error) {
        return (error as DomainError).details?.[0]?.path;
      }
      return 'accepted';
    };
    expect(path(() => assertCron('* * *', 'UTC'))).toBe('cron');
    expect(path(() => assertCron('61 * * * *', 'UTC'))).toBe('cron');
    expect(path(() => assertCron('* * * * * *', 'UTC'))).toBe('cron');
    expect(path(() => assertCron('* * * * *', 'Mars/Base'))).toBe('timezone');
    expect(path(() => assertCron('*/5 9-17 * * 1-5', 'Europe/Berlin'))).toBe('accepted');
  });

  it('fires 30 2 * * * in Europe/Berlin once a day across the spring change, at 03:30 on the day 02:30 does not exist', () => {
    const s = schedule('30 2 * * *', 'Europe/Berlin', new Date('2027-03-26T12:00:00Z'));
    expect(s.upcoming(3, new Date('2027-03-26T12:00:00Z')).map(berlin)).toEqual([
      '27/03/2027, 02:30',
      '28/03/2027, 03:30',
      '29/03/2027, 02:30',
    ]);
    const fired = fireAt(s, everyMinuteBetween('2027-03-26T12:00:00Z', '2027-03-29T12:00:00Z'));
    expect(fired.map(berlin)).toEqual(['27/03/2027, 02:30', '28/03/2027, 03:30', '29/03/2027, 02:30']);
  });

  it('fires 30 2 * * * in Europe/Berlin once on the autumn day 02:30 happens twice', () => {
    const s = schedule('30 2 * * *', 'Europe/Berlin', new Date('2027-10-30T12:00:00Z'));
    const fired = fireAt(s, everyMinuteBetween('2027-10-30T12:00:00Z', '2027-11-01T12:00:00Z'));
    expect(fired.map((d) => d.toISOString())).toEqual(['2027-10-31T00:30:00.000Z', '2027-11-01T01:30:00.000Z']);
  });

  it('fires each occurrence once however often a worker claims it', () => {
    const s = schedule('* * * * *', 'UTC', new Date('2027-01-01T00:00:30Z'));
    const claims = [1, 2, 2.5, 3, 3.1, 3.9].map((m) => new Date(Date.parse('2027-01-01T00:00:00Z') + m * 60_000 + 500));
    expect(fireAt(s, claims).map((d) => d.toISOString())).toEqual([
      '2027-01-01T00:01:00.000Z',
      '2027-01-01T00:02:00.000Z',
      '2027-01-01T00:03:00.000Z',
    ]);
  });

  it.each([
    ['none', [], 6],
    ['latest', ['2027-01-01T01:00:00.000Z'], 5],
    ['all', ['00:10', '00:20', '00:30', '00:40', '00:50', '01:00'].map((t) => `2027-01-01T${t}:00.000Z`), 0],
  ] as const)('catches up occurrences missed while no worker ran with %s', (catchUp, fired, missed) => {
    const s = schedule('*/10 * * * *', 'UTC', new Date('2027-01-01T00:05:00Z'), { catchUp });
    const plan = s.plan(new Date('2027-01-01T01:05:00Z'));
    expect(plan.fire.map((d) => d.toISOString())).toEqual(fired);
    expect(plan.missed).toHaveLength(missed);
    expect(plan.next).toEqual(new Date('2027-01-01T01:10:00Z'));
  });

  it('runs an on-time occurrence and no caught-up one with latest, and at most the latest ten with all', () => {
    const latest = schedule('* * * * *', 'UTC', new Date('2027-01-01T00:00:30Z'));
    const plan = latest.plan(new Date('2027-01-01T00:05:20Z'));
    expect(plan.fire.map((d) => d.toISOString())).toEqual(['2027-01-01T00:05:00.000Z']);
    expect(plan.missed).toHaveLength(4);
    const all = schedule('* * * * *', 'UTC', new Date('2027-01-01T00:00:30Z'), { catchUp: 'all' });
    const long = all.plan(new Date('2027-01-01T01:00:30Z'));
    expect(long.fire).toHaveLength(11);
    expect(long.missed).toHaveLength(49);
  });

  it('has nothing to fire while paused, and counts from now when resumed', () => {
    const s = schedule('* * * * *', 'UTC', new Date('2027-01-01T00:00:30Z'));
    s.change({ enabled: false }, new Date('2027-01-01T00:00:40Z'));
    expect(s.plan(new Date('2027-01-01T00:10:00Z')).fire).toEqual([]);
    s.change({ enabled: true }, new Date('2027-01-01T00:10:10Z'));
    expect(s.toProps().nextFireAt).toEqual(new Date('2027-01-01T00:11:00Z'));
  });
});
