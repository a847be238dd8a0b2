import { isUnstorableWrite } from './postgres-errors';

const pgError = (code: string, message: string, detail?: string) => Object.assign(new Error(message), { code, detail });

describe('isUnstorableWrite', () => {
  it('knows the values PostgreSQL refuses to store, wherever TypeORM wrapped the error', () => {
    expect(isUnstorableWrite(pgError('22P05', 'unsupported Unicode escape sequence', '\\u0000 cannot be converted to text.'))).toBe(true);
    expect(
      isUnstorableWrite(pgError('22P02', 'invalid input syntax for type json', 'Unicode low surrogate must follow a high surrogate.')),
    ).toBe(true);
    expect(isUnstorableWrite(pgError('22021', 'invalid byte sequence for encoding "UTF8": 0x00'))).toBe(true);
    expect(isUnstorableWrite(pgError('54000', 'total size of jsonb object elements exceeds the maximum of 268435455 bytes'))).toBe(true);
    expect(isUnstorableWrite({ message: 'Query failed', driverError: pgError('22P05', 'unsupported Unicode escape sequence') })).toBe(true);
  });

  it('leaves other failures to be tried again', () => {
    expect(isUnstorableWrite(pgError('22P02', 'invalid input syntax for type uuid: "x"'))).toBe(false);
    expect(isUnstorableWrite(pgError('08006', 'Connection terminated unexpectedly'))).toBe(false);
    expect(isUnstorableWrite(new Error('Connection terminated unexpectedly'))).toBe(false);
  });
});
