import { EndpointSlots, MAX_PER_ENDPOINT } from './endpoint-slots';

describe('EndpointSlots', () => {
  it('lets a healthy endpoint have MAX_PER_ENDPOINT deliveries in flight, the next waiting for a slot', async () => {
    const slots = new EndpointSlots();
    const releases = await Promise.all(Array.from({ length: MAX_PER_ENDPOINT }, () => slots.acquire('e')));
    expect(releases.every((r) => typeof r === 'function')).toBe(true);
    let waited = false;
    const next = slots.acquire('e').then((release) => {
      waited = true;
      return release;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(waited).toBe(false);
    releases[0]!();
    expect(typeof (await next)).toBe('function');
  });

  it('halves the window of an endpoint whose requests get no answer: one in flight, the next waits', async () => {
    const slots = new EndpointSlots();
    for (const expected of [4, 2, 1, 1]) {
      slots.record('slow', false);
      expect(slots.limitOf('slow')).toBe(expected);
    }
    const first = await slots.acquire('slow');
    let second = false;
    const next = slots.acquire('slow').then((release) => {
      second = true;
      return release;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(second).toBe(false);
    // Another endpoint is not affected.
    expect(slots.limitOf('other')).toBe(MAX_PER_ENDPOINT);
    expect(await slots.acquire('other')).not.toBeNull();
    // Answers widen it again, one at a time.
    first();
    (await next)();
    slots.record('slow', true);
    expect(slots.limitOf('slow')).toBe(2);
    expect(typeof (await slots.acquire('slow'))).toBe('function');
  });
});
