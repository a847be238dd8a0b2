import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Occurrence, Schedule } from './schedule';

export abstract class ScheduleRepository {
  abstract insert(schedule: Schedule): Promise<void>;
  abstract update(schedule: Schedule): Promise<void>;
  abstract find(organizationId: string, workflowId: string, id: string): Promise<Schedule | null>;
  abstract list(organizationId: string, workflowId: string, page: PageRequest): Promise<Page<Schedule>>;
  /**
   * The workflow's schedules and its organization's, counted under a lock held until the
   * transaction ends (one create at a time in the organization).
   */
  abstract countForCreate(organizationId: string, workflowId: string): Promise<{ workflow: number; organization: number }>;
  abstract delete(organizationId: string, workflowId: string, id: string): Promise<boolean>;
  abstract deleteOfWorkflow(organizationId: string, workflowId: string): Promise<void>;
  /** Organizations with enabled schedules due at `now` (at most `limit`). */
  abstract dueOrganizations(now: Date, limit: number): Promise<string[]>;
  /**
   * One enabled schedule of the organization due at `now`, the earliest, locked until the
   * transaction ends; one that another worker holds is skipped (FOR UPDATE SKIP LOCKED), so
   * each occurrence is claimed once.
   */
  abstract claimDue(now: Date, organizationId: string): Promise<Schedule | null>;
  /** Records what happened at occurrences; keeps the newest few hundred per schedule. */
  abstract record(schedule: Schedule, occurrences: Occurrence[]): Promise<void>;
  /** Recorded occurrences, newest first. */
  abstract recent(scheduleId: string, limit: number): Promise<Occurrence[]>;
}
