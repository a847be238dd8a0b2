import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
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
/** Which topics each process listens for, so that the others NOTIFY only those. */
const INTEREST_CHANNEL = 'platform_signal_interest';
/**
 * How often a process repeats the topics it listens for; another forgets a topic three of
 * these after it last heard it.
 */
const INTEREST_REFRESH_MS = 10_000;
/**
 * A process that has just (re)connected its listener asks the others for their topics, and
 * sends every topic until this long after (or until their next refresh, for one that is slow to answer).
 */
const INTEREST_ANSWER_MS = 1000;
/**
 * A waiter whose topic this process did not listen for until then checks again this soon: a
 * change committed before the others heard of the new interest was not NOTIFYed.
 */
const NEW_INTEREST_RECHECK_MS = 100;
/** Injection token of the interest refresh period in ms (tests shorten it). */
export const SIGNAL_INTEREST_REFRESH_MS = Symbol('SIGNAL_INTEREST_REFRESH_MS');

/**
 * Best-effort "something changed" signals between processes: an execution finished, a cancel
 * was asked. Always delivered in this process; across processes through LISTEN/NOTIFY on a
 * Postgres server (embedded PGlite is one process, and its NOTIFY does not cross connections).
 * Nothing depends on a signal for correctness: waiters re-read their row on a short poll too.
 *
 * A signal is NOTIFYed only when another process listens for its topic: each process tells the
 * others which topics it has handlers or waiters for (when one is new, and every
 * INTEREST_REFRESH_MS). A run's steps raise a signal each for live streams, which are rarely
 * open; most would otherwise be statements that nobody hears.
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
  /** Handlers and waiters in this process, by topic. */
  private readonly interest = new Map<string, number>();
  /** Until when another process listens for a topic, as last heard. */
  private readonly remoteInterest = new Map<string, number>();
  /** Until then every topic is NOTIFYed: this process has not heard the others (yet, or any more). */
  private everythingUntil = Infinity;
  private announcing = false;
  private asking = false;
  private refreshTimer?: NodeJS.Timeout;

  constructor(
    private readonly connection: DatabaseConnection,
    @Optional() @Inject(SIGNAL_INTEREST_REFRESH_MS) private readonly interestRefreshMs: number = INTEREST_REFRESH_MS,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.connection.singleSession) return;
    await this.listen();
    this.refreshTimer = setInterval(() => this.announce(), this.interestRefreshMs);
    this.refreshTimer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    clearInterval(this.refreshTimer);
    await Promise.all([this.listener?.end().catch(() => undefined), this.publisher?.end().catch(() => undefined)]);
  }

  /**
   * Tells every process (this one at once) that `topic` happened to `id`. `value` (e.g. the
   * finished record) reaches this process's waiters only; others re-read.
   */
  publish(topic: string, id: string, value?: unknown): void {
    this.deliver(topic, id, value);
    if (this.connection.singleSession || this.stopped || !this.heardOf(topic)) return;
    void this.outbox.add(`${topic}|${id}`).catch(() => undefined);
  }

  /** Calls `handler` with the id of every `topic` signal, from this process and the others, for as long as the process runs. */
  on(topic: string, handler: (id: string) => void): void {
    this.local.on(topic, handler);
    this.listenFor(topic);
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
    let wait = this.listenFor(topic) ? Math.min(pollMs, NEW_INTEREST_RECHECK_MS) : pollMs;
    const deadline = Date.now() + timeoutMs;
    try {
      for (;;) {
        // Armed before the check, so a signal that lands during it is not missed.
        const signaled = new Promise<void>((resolve) => (wake = resolve));
        const result = delivered ?? (await check());
        const left = deadline - Date.now();
        if (result !== null || left <= 0) return result;
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([signaled, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.min(left, wait))))]);
        clearTimeout(timer);
        wait = pollMs;
      }
    } finally {
      this.local.off(key, onSignal);
      this.stopListeningFor(topic);
    }
  }

  /** Counts a handler or waiter for `topic`; answers whether the topic is new here (then the others are told). */
  private listenFor(topic: string): boolean {
    const count = this.interest.get(topic) ?? 0;
    this.interest.set(topic, count + 1);
    if (count > 0) return false;
    this.announce();
    return true;
  }

  private stopListeningFor(topic: string): void {
    const count = (this.interest.get(topic) ?? 1) - 1;
    if (count > 0) this.interest.set(topic, count);
    else this.interest.delete(topic);
  }

  /** Whether another process may listen for `topic`. */
  private heardOf(topic: string): boolean {
    const now = Date.now();
    return now < this.everythingUntil || (this.remoteInterest.get(topic) ?? 0) > now;
  }

  /**
   * Tells the others, at the end of this turn, every topic this process listens for; `ask`
   * asks them to answer with theirs.
   */
  private announce(ask = false): void {
    this.asking ||= ask;
    if (this.announcing || this.connection.singleSession || this.stopped || !(this.asking || this.interest.size)) return;
    this.announcing = true;
    setImmediate(() => {
      const question = this.asking ? '?' : '';
      this.announcing = this.asking = false;
      void this.notify(`${this.origin}|${question}|${[...this.interest.keys()].join(';')}`, INTEREST_CHANNEL);
    });
  }

  private heardInterest(payload: string): void {
    const [origin, ask, topics] = payload.split('|');
    if (origin === this.origin) return;
    if (ask === '?') this.announce();
    const until = Date.now() + 3 * this.interestRefreshMs;
    for (const topic of topics ? topics.split(';') : []) this.remoteInterest.set(topic, until);
  }

  private deliver(topic: string, id: string, value?: unknown): void {
    this.local.emit(`${topic}:${id}`, value);
    this.local.emit(topic, id);
  }

  /**
   * Signals raised in one turn, or while the last NOTIFY was under way (there is one connection
   * to send them), go out as few NOTIFYs as their size allows.
   */
  private readonly outbox = new Coalescer<string, void>(
    async (signals) => {
      for (let i = 0; i < signals.length; i += SIGNALS_PER_NOTIFY) {
        await this.notify(`${this.origin}|${signals.slice(i, i + SIGNALS_PER_NOTIFY).join(';')}`);
      }
      return signals.map(() => undefined);
    },
    { maxInFlight: 1 },
  );

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
      // Deaf to the others' interest until the listener is back: every topic goes out.
      this.everythingUntil = Infinity;
      if (this.listener === client) this.listener = null;
      client.removeAllListeners('end');
      void client.end().catch(() => undefined);
      this.reconnect();
    };
    client.on('error', retry);
    client.on('end', retry);
    client.on('notification', (message) => {
      if (message.channel === DATA_CHANNEL) return this.receiveData(message.payload ?? '');
      if (message.channel === INTEREST_CHANNEL) return this.heardInterest(message.payload ?? '');
      const [origin, ...signals] = (message.payload ?? '').split(/[|;]/);
      if (origin === this.origin) return;
      for (let i = 0; i + 1 < signals.length; i += 2) this.deliver(signals[i], signals[i + 1]);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}; LISTEN ${DATA_CHANNEL}; LISTEN ${INTEREST_CHANNEL}`);
      if (this.stopped) return void client.end().catch(() => undefined);
      this.listener = client;
      this.failures = 0;
      // Until the others have answered with their topics, every topic goes out.
      this.everythingUntil = Date.now() + Math.min(INTEREST_ANSWER_MS, this.interestRefreshMs);
      this.announce(true);
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
