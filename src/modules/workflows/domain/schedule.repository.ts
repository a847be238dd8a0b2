import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Occurrence, Schedule } from './schedule';

export abstract class ScheduleRepository {
  abstract insert(schedule: Schedule): Promise<void>;
  abstract update(schedule: Schedule): Promise<void>;
  abstract find(organizationId: string, workflowId: string, id: string): Promise<Schedule | null>;
  abstract list(organizationId: string, workflowId: string, page: PageRequest): Promise<Page<Schedule>>;
  /** The workflow's schedules, counted under a lock held until the transaction ends (one create at a time). */
  abstract countForCreate(workflowId: string): Promise<number>;
  abstract delete(organizationId: string, workflowId: string, id: string): Promise<boolean>;
  abstract deleteOfWorkflow(organizationId: string, workflowId: string): Promise<void>;
  /**
   * One enabled schedule due at `now`, locked until the transaction ends; one that another
   * worker holds is skipped (FOR UPDATE SKIP LOCKED), so each occurrence is claimed once.
   */
  abstract claimDue(now: Date): Promise<Schedule | null>;
  /** Records what happened at occurrences; keeps the newest few hundred per schedule. */
  abstract record(schedule: Schedule, occurrences: Occurrence[]): Promise<void>;
  /** Recorded occurrences, newest first. */
  abstract recent(scheduleId: string, limit: number): Promise<Occurrence[]>;
}
