import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Client, Pool } from 'pg';
import { DatabaseConnection } from '../database/database-connection';
import { Coalescer } from '../shared/batching/coalescer';

const CHANNEL = 'platform_signals';
/** Messages with data (not in any row: a model's text as it streams), on a channel of their own. */
const DATA_CHANNEL = 'platform_signal_data';
/** The most of a message's data one NOTIFY carries (a payload holds under 8000 bytes, with its envelope). */
const MAX_SIGNAL_DATA = 7000;
/** How often a waiter re-reads its row when no signal comes (a lost NOTIFY, a dropped listener). */
const POLL_MS = 1000;
const RECONNECT_MS = [250, 500, 1000, 2000, 5000];
/** A NOTIFY payload holds under 8000 bytes; a signal is a topic and a UUID. */
const SIGNALS_PER_NOTIFY = 100;

/**
 * Best-effort "something changed" signals between processes: an execution finished, a cancel
 * was asked. Always delivered in this process; across processes through LISTEN/NOTIFY on a
 * Postgres server (embedded PGlite is one process, and its NOTIFY does not cross connections).
 * Nothing depends on a signal for correctness: waiters re-read their row on a short poll too.
 */
@Injectable()
export class Signals implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Signals');
  private readonly local = new EventEmitter().setMaxListeners(0);
  private readonly origin = randomUUID();
  private listener: Client | null = null;
  private publisher: Pool | null = null;
  private stopped = false;
  private failures = 0;
  private reconnectTimer?: NodeJS.Timeout;

  constructor(private readonly connection: DatabaseConnection) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.connection.singleSession) await this.listen();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    await Promise.all([this.listener?.end().catch(() => undefined), this.publisher?.end().catch(() => undefined)]);
  }

  /**
   * Tells every process (this one at once) that `topic` happened to `id`. `value` (e.g. the
   * finished record) reaches this process's waiters only; others re-read.
   */
  publish(topic: string, id: string, value?: unknown): void {
    this.deliver(topic, id, value);
    if (this.connection.singleSession || this.stopped) return;
    void this.outbox.add(`${topic}|${id}`).catch(() => undefined);
  }

  on(topic: string, handler: (id: string) => void): void {
    this.local.on(topic, handler);
  }

  /**
   * Sends `data` (at most MAX_SIGNAL_DATA characters) about `id` to the other processes, best
   * effort, for their `onData` handlers; this process is not told (it knows already).
   */
  broadcast(topic: string, id: string, data: string): void {
    if (this.connection.singleSession || this.stopped) return;
    void this.notify(JSON.stringify([this.origin, topic, id, data.slice(0, MAX_SIGNAL_DATA)]), DATA_CHANNEL);
  }

  /** Calls `handler` with what other processes `broadcast` on `topic`. */
  onData(topic: string, handler: (id: string, data: string) => void): void {
    this.local.on(`data:${topic}`, handler);
  }

  /**
   * Calls `check` until it answers non-null or `timeoutMs` passes (then null): at once, on each
   * `topic` signal for `id`, and at least every `pollMs` (a second).
   */
  async waitFor<T>(topic: string, id: string, timeoutMs: number, check: () => Promise<T | null>, pollMs = POLL_MS): Promise<T | null> {
    const key = `${topic}:${id}`;
    let wake = () => {};
    let delivered: T | undefined;
    const onSignal = (value?: T) => {
      delivered = value;
      wake();
    };
    this.local.on(key, onSignal);
    const deadline = Date.now() + timeoutMs;
    try {
      for (;;) {
        // Armed before the check, so a signal that lands during it is not missed.
        const signaled = new Promise<void>((resolve) => (wake = resolve));
        const result = delivered ?? (await check());
        const left = deadline - Date.now();
        if (result !== null || left <= 0) return result;
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([signaled, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.min(left, pollMs))))]);
        clearTimeout(timer);
      }
    } finally {
      this.local.off(key, onSignal);
    }
  }

  private deliver(topic: string, id: string, value?: unknown): void {
    this.local.emit(`${topic}:${id}`, value);
    this.local.emit(topic, id);
  }

  /** Signals raised in one turn go out as few NOTIFYs as their size allows. */
  private readonly outbox = new Coalescer<string, void>(async (signals) => {
    for (let i = 0; i < signals.length; i += SIGNALS_PER_NOTIFY) {
      await this.notify(`${this.origin}|${signals.slice(i, i + SIGNALS_PER_NOTIFY).join(';')}`);
    }
    return signals.map(() => undefined);
  });

  private async notify(payload: string, channel = CHANNEL): Promise<void> {
    if (!this.publisher) {
      this.publisher = new Pool({ connectionString: this.connection.url, max: 1, application_name: 'platform-signals' });
      // A dropped idle connection is replaced on the next signal.
      this.publisher.on('error', () => undefined);
    }
    try {
      await this.publisher.query('SELECT pg_notify($1, $2)', [channel, payload]);
    } catch (error) {
      this.logger.debug(`Signal not sent: ${(error as Error).message}`);
    }
  }

  private async listen(): Promise<void> {
    if (this.stopped) return;
    const client = new Client({ connectionString: this.connection.url, application_name: 'platform-signals-listener' });
    let retried = false;
    const retry = () => {
      if (retried) return;
      retried = true;
      if (this.listener === client) this.listener = null;
      client.removeAllListeners('end');
      void client.end().catch(() => undefined);
      this.reconnect();
    };
    client.on('error', retry);
    client.on('end', retry);
    client.on('notification', (message) => {
      if (message.channel === DATA_CHANNEL) return this.receiveData(message.payload ?? '');
      const [origin, ...signals] = (message.payload ?? '').split(/[|;]/);
      if (origin === this.origin) return;
      for (let i = 0; i + 1 < signals.length; i += 2) this.deliver(signals[i], signals[i + 1]);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}; LISTEN ${DATA_CHANNEL}`);
      if (this.stopped) return void client.end().catch(() => undefined);
      this.listener = client;
      this.failures = 0;
    } catch (error) {
      this.logger.warn(`Signal listener not connected: ${(error as Error).message}`);
      retry();
    }
  }

  private receiveData(payload: string): void {
    try {
      const [origin, topic, id, data] = JSON.parse(payload) as [string, string, string, string];
      if (origin !== this.origin) this.local.emit(`data:${topic}`, id, data);
    } catch {
      // Not one of ours: nothing to deliver.
    }
  }

  private reconnect(): void {
    if (this.stopped) return;
    const wait = RECONNECT_MS[Math.min(this.failures++, RECONNECT_MS.length - 1)];
    this.reconnectTimer = setTimeout(() => void this.listen(), wait);
    this.reconnectTimer.unref();
  }
}
