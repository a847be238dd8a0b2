import { assertRetention } from './audit-event';

describe('audit retention', () => {
  it('takes whole days from 30 to the instance cap', () => {
    expect(() => assertRetention(30, 400)).not.toThrow();
    expect(() => assertRetention(400, 400)).not.toThrow();
    for (const days of [29, 401, 30.5, Number.NaN]) {
      expect(() => assertRetention(days, 400)).toThrow(expect.objectContaining({ code: 'VALIDATION_FAILED' }));
    }
  });
});
