import { Logger } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import type { ThrottlerStorageRecord } from '@nestjs/throttler/dist/throttler-storage-record.interface';
import { Counter, Registry } from 'prom-client';
import { LocalFallbackStorage } from './local-fallback.storage';

/** A shared store that answers, or fails like an unreachable Redis. */
class FlakyStore implements ThrottlerStorage {
  down = false;
  calls = 0;
  async increment(): Promise<ThrottlerStorageRecord> {
    this.calls++;
    if (this.down) throw new Error('Connection is closed.');
    return { totalHits: 1, timeToExpire: 60, isBlocked: false, timeToBlockExpire: 0 };
  }
}

describe('LocalFallbackStorage', () => {
  let store: FlakyStore;
  let failures: Counter;
  let storage: LocalFallbackStorage;
  let warn: jest.SpyInstance;

  beforeEach(() => {
    store = new FlakyStore();
    failures = new Counter({ name: 'rate_limit_storage_errors_total', help: 'x', registers: [new Registry()] });
    storage = new LocalFallbackStorage(store, failures);
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  afterEach(() => {
    storage.onApplicationShutdown();
    warn.mockRestore();
  });

  const count = () => storage.increment('login:ip:203.0.113.7', 60_000, 3, 60_000, 'login');
  const failuresCounted = async () => (await failures.get()).values[0]?.value ?? 0;

  it('counts in the store while it answers', async () => {
    expect(await count()).toMatchObject({ totalHits: 1, isBlocked: false });
    expect(store.calls).toBe(1);
    expect(await failuresCounted()).toBe(0);
  });

  it('counts in memory while the store fails, so the limit still holds: the 4th of a limit of 3 is over', async () => {
    store.down = true;
    const records = [await count(), await count(), await count(), await count()];
    expect(records.map((r) => r.totalHits)).toEqual([1, 2, 3, 4]);
    expect(records.map((r) => r.isBlocked)).toEqual([false, false, false, true]);
    expect(records[3].timeToBlockExpire).toBeGreaterThan(0);
    // Every count tried the store first, and each failure is counted for /metrics.
    expect(store.calls).toBe(4);
    expect(await failuresCounted()).toBe(4);
  });

  it('logs the failure at most once every 10 s', async () => {
    jest.useFakeTimers({ now: 1_000_000, doNotFake: ['nextTick', 'setImmediate'] });
    try {
      store.down = true;
      for (let i = 0; i < 5; i++) await count();
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0][0]).toContain("counting in this process's memory");
      jest.setSystemTime(1_000_000 + 10_001);
      await count();
      expect(warn).toHaveBeenCalledTimes(2);
    } finally {
      jest.useRealTimers();
    }
  });

  it('goes back to the store when it answers again', async () => {
    store.down = true;
    await count();
    store.down = false;
    expect(await count()).toMatchObject({ totalHits: 1 });
    expect(store.calls).toBe(2);
    expect(await failuresCounted()).toBe(1);
  });
});
