import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DatabaseConnection } from '../../src/database/database-connection';
import { Signals } from '../../src/queue/signals';
import { eventually } from '../support/eventually';

/** Shortened for the test (10 s in the service): a topic is forgotten three of these after it was last announced. */
const REFRESH_MS = 200;

/**
 * Signals between two processes' worth of Signals on one PostgreSQL server, and a plain
 * connection listening to what goes over the wire: a signal is NOTIFYed only while another
 * process listens for its topic.
 */
describe('cross-process signals (LISTEN/NOTIFY)', () => {
  const connection = new DatabaseConnection(process.env.DATABASE_URL!, false);
  let here: Signals;
  let there: Signals;
  let wire: Client;
  /** Payloads of the signal NOTIFYs, as any connection sees them. */
  const sent: string[] = [];
  const wasSent = (id: string) => sent.some((payload) => payload.includes(id));
  /** Payloads of the interest NOTIFYs (`origin|ask|topic;topic`): which topics a process said it listens for. */
  const interest: string[] = [];
  const announced = (topic: string) => interest.some((payload) => (payload.split('|')[2] ?? '').split(';').includes(topic));

  beforeAll(async () => {
    wire = new Client({ connectionString: connection.url });
    await wire.connect();
    wire.on('notification', (message) => {
      if (message.channel === 'platform_signals') sent.push(message.payload ?? '');
      if (message.channel === 'platform_signal_interest') interest.push(message.payload ?? '');
    });
    await wire.query('LISTEN platform_signals; LISTEN platform_signal_interest');
    here = new Signals(connection, REFRESH_MS);
    there = new Signals(connection, REFRESH_MS);
    await Promise.all([here.onApplicationBootstrap(), there.onApplicationBootstrap()]);
    // Past the window after connecting in which every signal goes out: a signal of `here` on a
    // topic nobody listens for no longer goes over the wire, while one `there` listens for does.
    there.on('ready.changed', () => undefined);
    await eventually(async () => !(await goesOut('nobody.changed', 'ready.changed')).sent, {
      message: "the end of the window in which every one of `here`'s signals goes out",
    });
  });

  afterAll(async () => {
    await Promise.all([here.onApplicationShutdown(), there.onApplicationShutdown(), wire.end()]);
  });

  /** Publishes probes on `topic` until one goes over the wire: `from` has heard that another process listens for it. */
  const untilHeard = (topic: string, from = here) => {
    const probes: string[] = [];
    return eventually(
      () => {
        probes.push(randomUUID());
        from.publish(topic, probes.at(-1)!);
        return probes.some(wasSent);
      },
      { message: `a ${topic} signal on the wire` },
    );
  };

  /**
   * Whether a `topic` signal that `from` publishes goes over the wire. `from` sends its signals
   * in order on one connection: once a probe on `heard` (a topic another process listens for),
   * published after it, is on the wire, the `topic` one is there too or was never sent.
   */
  const goesOut = async (topic: string, heard: string, from = here) => {
    const id = randomUUID();
    from.publish(topic, id);
    await untilHeard(heard, from);
    return { id, sent: wasSent(id) };
  };

  it('reaches a handler in another process, and sends nothing for a topic no other process listens for', async () => {
    const reached: string[] = [];
    there.on('things.changed', (id) => reached.push(id));
    const heardHere: string[] = [];
    here.on('quiet.changed', (id) => heardHere.push(id));
    await untilHeard('things.changed');

    const quiet = randomUUID();
    const loud = randomUUID();
    here.publish('quiet.changed', quiet);
    here.publish('things.changed', loud);

    await eventually(() => reached.includes(loud), { message: 'the signal in the other process' });
    // One connection sends them in order: the quiet one would have gone first.
    await eventually(() => wasSent(loud));
    expect(wasSent(quiet)).toBe(false);
    expect(heardHere).toEqual([quiet]);
  });

  it("wakes another process's waiter at once, and stops sending its topic once nobody waits", async () => {
    const id = randomUUID();
    let finished = false;
    // A poll of a minute: only the signal ends this wait within the test's time.
    const waited = there.waitFor('records.finished', id, 20_000, async () => (finished ? 'final' : null), 60_000);
    await untilHeard('records.finished');

    finished = true;
    const sentAt = Date.now();
    here.publish('records.finished', id);
    await expect(waited).resolves.toBe('final');
    expect(Date.now() - sentAt).toBeLessThan(10_000);

    // The waiter is gone; three refresh periods after `there` last announced the topic, `here`
    // forgets it: its signals on the topic stop going over the wire (within a few periods).
    await eventually(async () => !(await goesOut('records.finished', 'things.changed')).sent, {
      timeoutMs: 10 * REFRESH_MS,
      message: 'records.finished signals to stop going over the wire',
    });
    const after = randomUUID();
    const marker = randomUUID();
    here.publish('records.finished', after);
    here.publish('things.changed', marker);
    await eventually(() => wasSent(marker), { message: 'the marker on the wire' });
    expect(wasSent(after)).toBe(false);
  });

  it("learns the others' topics when it connects, without waiting for their next refresh", async () => {
    // Refreshes once a minute: within the test, only the answer to the newcomer's question tells it.
    const settled = new Signals(connection, 60_000);
    const newcomer = new Signals(connection, 60_000);
    try {
      await settled.onApplicationBootstrap();
      const reached: string[] = [];
      settled.on('settled.changed', (id) => reached.push(id));
      // Its topic announced before the newcomer listens: the newcomer can learn it only by asking.
      await eventually(() => announced('settled.changed'), { message: 'the settled process to announce its topic' });
      await newcomer.onApplicationBootstrap();
      // Past the newcomer's window after connecting in which every signal goes out (a second):
      // its signal on a topic nobody listens for no longer goes over the wire.
      await eventually(async () => !(await goesOut('nobody.changed', 'settled.changed', newcomer)).sent, {
        message: "the end of the window in which every one of the newcomer's signals goes out",
      });

      await untilHeard('settled.changed', newcomer);
      const id = randomUUID();
      newcomer.publish('settled.changed', id);
      await eventually(() => reached.includes(id), { message: 'the signal in the settled process' });
      const quiet = randomUUID();
      const marker = randomUUID();
      newcomer.publish('nobody.changed', quiet);
      newcomer.publish('settled.changed', marker);
      await eventually(() => wasSent(marker), { message: 'the marker on the wire' });
      expect(wasSent(quiet)).toBe(false);
    } finally {
      await Promise.all([settled.onApplicationShutdown(), newcomer.onApplicationShutdown()]);
    }
  });
});
