import { stableUuid } from './stable-uuid';

describe('stableUuid', () => {
  it('is the same UUID for the same name and another for another name', () => {
    const id = stableUuid('e1:2:call_a');
    expect(id).toBe(stableUuid('e1:2:call_a'));
    expect(id).not.toBe(stableUuid('e1:2:call_b'));
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
