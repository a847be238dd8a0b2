import { Injectable } from '@nestjs/common';
import { DurableJobKind, DurableJobs } from '../../../queue/durable-jobs';
import { AgentSteps } from '../../agents/application/agent-steps';
import { resourceEventData } from '../../../shared/events/event-data';
import { Run } from '../domain/run';
import { WaitRepository } from '../domain/wait.repository';
import { RunRepository, UnfinishedRun, WaitingKey } from '../domain/run.repository';
import { RunResponse } from '../run.response';

const RUN_QUEUE = 'workflow-run';

/** Times a lost worker may cost a run before it is failed. */
export const RUN_LOST_WORKER_ALLOWANCE = 5;

/** The worker touches a run's job this often (halved); a run not touched for this long is taken over. */
const HEARTBEAT_SECONDS = 10;

export function runJobOptions(run: { timeoutMs: number }) {
  return {
    // The heartbeat, not the lease, notices a dead worker; the lease only bounds a stuck one.
    leaseSeconds: Math.ceil(run.timeoutMs / 1000) + 60,
    retryLimit: RUN_LOST_WORKER_ALLOWANCE,
    heartbeatSeconds: HEARTBEAT_SECONDS,
  };
}

/** In the transaction of what woke them: the waiting runs of `runIds` go on now; answers what to call once it committed. */
async function resumeRuns(core: DurableJobs, runs: RunRepository, runIds: string[]): Promise<() => void> {
  const woken = runIds.length ? await core.queue.startNow(RUN_QUEUE, await runs.waitingJobs(runIds)) : 0;
  return () => {
    if (woken) core.queue.wake(RUN_QUEUE);
  };
}

/**
 * Workflow runs as a kind of durable job: one job per run on `workflow-run`, kept alive by a
 * heartbeat; steps are not jobs of their own, the run's job carries them. A run whose steps all
 * wait (a sleep, a retry's backoff, a child run) answers `later` and goes on with a new job at
 * the time, or sooner when a child it waits for ends.
 */
@Injectable()
export class RunJobs extends DurableJobKind<Run, Run, UnfinishedRun> {
  /** In the transaction of what woke them (a wait's answer): the waiting runs go on now; answers what to call once it committed. */
  readonly resume: (runIds: string[]) => Promise<() => void>;

  private readonly runs: RunRepository;

  constructor(core: DurableJobs, runs: RunRepository, waits: WaitRepository, agentSteps: AgentSteps) {
    super(core, {
      name: 'run',
      queue: RUN_QUEUE,
      batchSize: 8,
      share: 'runs',
      records: runs,
      metrics: { total: 'workflow_runs_total', duration: 'workflow_run_duration_seconds', noun: 'Workflow runs', labelNames: [] },
      recordOf: (run) => run,
      labels: () => ({}),
      jobData: (id) => ({ runId: id }),
      recordId: (data) => (data as { runId: string }).runId,
      sendOptions: runJobOptions,
      resumeOptions: runJobOptions,
      recoverable: (u) => u.attempts <= RUN_LOST_WORKER_ALLOWANCE,
      lost: { code: 'RUN_LOST', message: 'The run was interrupted by lost workers more often than allowed' },
      // A child's end wakes its parent waiting for it; a parent parking while its child just ended is not put off.
      // The agent executions of steps it ended (those waiting for a retry hold theirs) are canceled once it committed.
      // The places its runs held go to the runs of their keys waiting for one.
      ended: async (ended) => {
        const parents = [...new Set(ended.flatMap((run) => (run.parentRunId ? [run.parentRunId] : [])))];
        const wake = await resumeRuns(core, runs, parents);
        // The waits of wait steps it ended (they keep what they waited for): no answer may reach them any more.
        const unanswered = ended.filter((run) => run.steps.some((s) => s.status === 'canceled' && s.waitingFor));
        if (unanswered.length) await waits.close(unanswered.map((run) => run.id));
        let admitted = 0;
        for (const place of placesFreed(ended)) admitted += await this.handOver(place);
        const executions = ended.flatMap((run) =>
          run.steps.filter((s) => s.status === 'canceled' && s.executionId).map((s) => s.executionId!),
        );
        return () => {
          wake();
          if (admitted) core.queue.wake(RUN_QUEUE);
          if (executions.length) void agentSteps.cancelOwned(executions).catch(() => undefined);
        };
      },
      // A run parking while what it waits for came (a child's end, a wait's answer) goes on at once.
      resumeAt: async (run, at) => ((await runs.awakened(run.id)) ? new Date() : at),
      event: (run) => ({
        organizationId: run.organizationId,
        type: `workflow.run.${run.status}`,
        data: resourceEventData(RunResponse.of(run, false), `/api/workflows/${run.workflowId}/runs/${run.id}`),
      }),
    });
    this.resume = (runIds) => resumeRuns(core, runs, runIds);
    this.runs = runs;
    core.reconciler.addChore(() => this.admitWaiting(core));
  }

  /**
   * In the current transaction, which holds the claim of the key: the free places go to the
   * runs waiting for one, oldest first, each sent on its job. Answers how many got one, and the
   * places still free.
   */
  async admit(workflowId: string, key: string, limit: number): Promise<{ admitted: number; free: number }> {
    const { admitted, free } = await this.runs.admit(workflowId, key, limit);
    for (const run of admitted) await this.send(run, this.prioritized(run, runJobOptions(run)));
    return { admitted: admitted.length, free };
  }

  /** Claims a key's places and hands the free ones over; answers how many runs got one. */
  private async handOver({ workflowId, key, limit }: WaitingKey): Promise<number> {
    await this.runs.claimPlaces(workflowId, key);
    return (await this.admit(workflowId, key, limit)).admitted;
  }

  /**
   * The reconciler's chore: keys whose runs wait for a place although one is free (a limit
   * raised by a new version, a hand-over that found its waiting run locked) are handed over.
   */
  private async admitWaiting(core: DurableJobs): Promise<void> {
    let admitted = 0;
    for (const key of await this.runs.waitingKeys(WAITING_GRACE_MS)) {
      admitted += await core.txHost.withTransaction(() => this.handOver(key));
    }
    if (admitted) this.wake();
  }
}

/** A run waiting for a place this long with one free was missed by its hand-over. */
const WAITING_GRACE_MS = 2_000;

/** The keys of the runs that held a place, once each, sorted: claims always taken in one order cannot deadlock. */
function placesFreed(ended: Run[]): WaitingKey[] {
  const keys = new Map<string, WaitingKey>();
  for (const { workflowId, concurrency } of ended) {
    if (concurrency && !concurrency.waitsForPlace)
      keys.set(`${workflowId}:${concurrency.key}`, { workflowId, key: concurrency.key, limit: concurrency.limit });
  }
  return [...keys.keys()].sort().map((k) => keys.get(k)!);
}
