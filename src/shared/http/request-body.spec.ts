import { depthExceeds } from './request-body';

describe('depthExceeds', () => {
  it('measures objects and arrays alike', () => {
    expect(depthExceeds({ a: { b: [1] } }, 3)).toBe(false);
    expect(depthExceeds({ a: { b: [{}] } }, 3)).toBe(true);
    expect(depthExceeds('scalar', 1)).toBe(false);
  });

  it('walks 100,000 levels without overflowing the stack', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(depthExceeds(deep, 32)).toBe(true);
  });
});
