import { csvCell } from './audit-events.service';

describe('csvCell (audit CSV export)', () => {
  it('quotes a field and doubles its quotes', () => {
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell(null)).toBe('');
    expect(csvCell(undefined)).toBe('');
    expect(csvCell(42)).toBe('"42"');
  });

  it.each(['=1+1', '+1', '-1', '@SUM(A1)', '\tx', '\rx'])('defuses %j, which starts a formula', (text) => {
    expect(csvCell(text)).toBe(`"'${text}"`);
  });

  it.each(['＝HYPERLINK("x")', '＋1', '－1', '＠SUM(A1)'])('defuses the full-width %j', (text) => {
    expect(csvCell(text)).toBe(`"'${text.replace(/"/g, '""')}"`);
  });

  it.each([' =1+1', '  +1', ' \t-1', '\n@SUM(A1)', '\u00a0=1', '\u3000＝1', ' ＠x'])(
    'defuses %j, a formula after leading whitespace',
    (text) => {
      expect(csvCell(text)).toBe(`"'${text}"`);
    },
  );

  it.each(['ada@example.com', 'a=b', 'agent.updated', ' plain', '1-2', '＝'.slice(1)])('leaves %j as it is', (text) => {
    expect(csvCell(text)).toBe(`"${text}"`);
  });

  it('leaves a negative number alone (it is a number, not a text)', () => {
    expect(csvCell(-5)).toBe('"-5"');
  });
});
