import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { AnsweredBy, StepWait, WaitAnswer } from './wait';

/** Whom a list of approvals is for. */
export interface Approver {
  organizationId: string;
  userId: string;
  email: string;
  role: string;
  /** The API key it calls with, if any. */
  keyId: string | null;
}

/** An event a wait may still take: kept a while when no wait was waiting for it. */
export interface KeptEvent {
  organizationId: string;
  name: string;
  key: string;
  data: unknown;
  by: AnsweredBy;
  createdAt: Date;
  expiresAt: Date;
}

/**
 * The waits of wait steps. Every answer is guarded on the wait still `pending`, so a wait is
 * answered once; events and the waits for them are matched under a lock per (organization,
 * name, key), so an event and a wait that begins at the same moment always meet.
 */
export abstract class WaitRepository {
  /** Records the wait unless the step's is recorded already; answers the one recorded. */
  abstract open(wait: StepWait): Promise<StepWait>;
  abstract find(runId: string, stepId: string): Promise<StepWait | null>;
  /** The pending wait's answer, guarded on it being pending; false when it was not. */
  abstract answer(runId: string, stepId: string, answer: WaitAnswer): Promise<boolean>;
  /** Answers every pending wait for the event; the runs they are of. */
  abstract answerEvent(organizationId: string, name: string, key: string, answer: WaitAnswer): Promise<string[]>;
  /** Holds the (organization, name, key) lock until the transaction ends. */
  abstract lockEvent(organizationId: string, name: string, key: string): Promise<void>;
  abstract keep(event: KeptEvent): Promise<void>;
  /** The newest kept event for the name and key not yet expired. */
  abstract kept(organizationId: string, name: string, key: string, now: Date): Promise<KeptEvent | null>;
  /** A pending wait that timed out is closed; false when it was not pending (an answer came first). */
  abstract expire(runId: string, stepId: string): Promise<boolean>;
  /** Closes the pending waits of runs that ended. */
  abstract close(runIds: string[]): Promise<void>;
  /** The pending approvals of the approver's organization it may answer, oldest first. */
  abstract pendingApprovals(approver: Approver, page: PageRequest): Promise<Page<StepWait>>;
  /** Deletes kept events that expired; answers how many. */
  abstract purgeKept(now: Date): Promise<number>;
}
