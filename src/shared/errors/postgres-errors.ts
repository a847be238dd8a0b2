/** Recognizes driver errors by their SQLSTATE, wherever TypeORM wrapped them. */
function sqlState(error: unknown): string | undefined {
  const e = error as { code?: unknown; driverError?: { code?: unknown } } | null;
  const code = e?.driverError?.code ?? e?.code;
  return typeof code === 'string' ? code : undefined;
}

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  if (sqlState(error) !== '23505') return false;
  if (!constraint) return true;
  const e = error as { constraint?: string; driverError?: { constraint?: string } };
  return (e.driverError?.constraint ?? e.constraint) === constraint;
}

/**
 * Data exceptions of a value the request brought: text that is not of its type (22P02), a
 * NUL or lone surrogate escape in JSON (22P05), a NUL byte in text (22021). The edge refuses
 * these first; this catches what a new path lets through.
 */
const UNSTORABLE_VALUE_STATES = new Set(['22P02', '22P05', '22021']);

export function isUnstorableValue(error: unknown): boolean {
  const state = sqlState(error);
  return state !== undefined && UNSTORABLE_VALUE_STATES.has(state);
}

/**
 * The database refused to store a value a worker wrote (not the service failing): a NUL or lone
 * surrogate escape in JSON (22P05, or 22P02 with "Unicode" in its detail), a NUL byte in text
 * (22021), a value over a size limit (54000). Writing it again fails the same way.
 */
export function isUnstorableWrite(error: unknown): boolean {
  const state = sqlState(error);
  if (state === '22P05' || state === '22021' || state === '54000') return true;
  if (state !== '22P02') return false;
  const e = error as { message?: unknown; detail?: unknown; driverError?: { message?: unknown; detail?: unknown } };
  const text = [e.message, e.detail, e.driverError?.message, e.driverError?.detail].filter((t) => typeof t === 'string').join(' ');
  return /unicode|surrogate/i.test(text);
}

const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN']);
const CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection is not established|Driver not Connected|Client was closed|the database system is (starting up|shutting down)/i;

/** True when the database cannot be reached at all (as opposed to a query that failed). */
export function isDatabaseUnavailable(error: unknown): boolean {
  const state = sqlState(error);
  if (state && (state.startsWith('08') || state === '57P01' || state === '57P02' || state === '57P03')) return true;
  if (state && CONNECTION_ERRNOS.has(state)) return true;
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && CONNECTION_MESSAGES.test(message);
}
