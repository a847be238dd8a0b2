import { createHash } from 'node:crypto';
import { Client, QueryResult } from 'pg';

/** pg 8.23's client keeps the status of PostgreSQL's last ReadyForQuery ('I' idle, 'T' in a transaction, 'E' failed one); its types do not say so. */
interface TransactionStatus {
  getTransactionStatus(): 'I' | 'T' | 'E' | null;
}

/**
 * The SQLSTATE (feature_not_supported) of PostgreSQL's "cached plan must not change result
 * type": a prepared statement's result columns changed under it (a migration added one). Its
 * message is translated where the server's lc_messages is, so the code is what is matched.
 */
const RESULT_TYPE_CHANGED = '0A000';

/** A statement's text as a prepared statement's name: the same text always gets the same name. */
function statementName(text: string): string {
  return `p_${createHash('sha1').update(text).digest('base64url')}`;
}

/**
 * A pg client that prepares the statements it runs again and again, so PostgreSQL parses and
 * plans each once per connection instead of once per call (TypeORM sends every statement
 * unnamed). A statement with parameters is named on its second use (the one-off ones stay
 * unnamed); each connection keeps at most `cacheSize` of them and sends the rest unnamed, so
 * the memory both sides keep per connection is bounded. Statements without parameters go as
 * they are (the simple protocol: several statements in one, as pg-boss sends).
 *
 * When a migration changes a table's columns under a prepared `SELECT *` or `RETURNING *`,
 * PostgreSQL refuses the statement once; the client forgets it, and retries it unnamed when it
 * was not inside a transaction (inside one, the transaction is already aborted: the caller's
 * retry, as for any failed transaction, runs it unnamed).
 */
/** A connection that can carry statements with its transaction's COMMIT (a `preparingClient`'s). */
export interface CommitCarrier {
  /** Sends `statement` (no parameters) with this transaction's COMMIT, in the same round trip; dropped with a ROLLBACK. */
  sendWithCommit(statement: string): void;
}

/** `connection` as a CommitCarrier, or null when it is not one (PGlite's, a plain pg client). */
export function commitCarrier(connection: unknown): CommitCarrier | null {
  return typeof (connection as Partial<CommitCarrier> | null)?.sendWithCommit === 'function' ? (connection as CommitCarrier) : null;
}

const COMMIT = /^\s*commit\s*;?\s*$/i;
const ENDS_OR_BEGINS = /^\s*(rollback|begin|start transaction)\b/i;

export function preparingClient(cacheSize: number): typeof Client {
  return class PreparingClient extends Client implements CommitCarrier {
    /** Statements waiting for this transaction's COMMIT. */
    private carried: string[] = [];
    /** Statement text to its name, for the ones prepared on this connection. */
    private readonly prepared = new Map<string, string>();
    /** Texts seen once; cleared when it grows past a bound. */
    private readonly seenOnce = new Set<string>();
    /** Texts never to prepare again on this connection. */
    private readonly refused = new Set<string>();

    sendWithCommit(statement: string): void {
      this.carried.push(statement);
    }

    override query(...args: unknown[]): never {
      if (this.carried.length && typeof args[0] === 'string') {
        // The carried statements go in the COMMIT's round trip (the simple protocol runs them in
        // order and stops at the first that fails, so the COMMIT then fails with it); a
        // ROLLBACK, or a transaction that somehow begins, drops them with the one they were for.
        if (COMMIT.test(args[0])) {
          args[0] = [...this.carried, 'COMMIT'].join(';\n');
          this.carried = [];
        } else if (ENDS_OR_BEGINS.test(args[0])) {
          this.carried = [];
        }
      }
      const [text, values, callback] = args;
      const name =
        typeof text === 'string' && Array.isArray(values) && values.length > 0 && (callback === undefined || typeof callback === 'function')
          ? this.nameFor(text)
          : null;
      if (!name) return (super.query as (...a: unknown[]) => never)(...args);
      const idle = (this as unknown as TransactionStatus).getTransactionStatus() === 'I';
      const result = (super.query({ name, text: text as string, values: values as unknown[] }) as Promise<QueryResult>).catch(
        (error: Error) => {
          if ((error as Error & { code?: string }).code !== RESULT_TYPE_CHANGED) throw error;
          this.prepared.delete(text as string);
          this.refused.add(text as string);
          if (!idle) throw error;
          return super.query(text as string, values as unknown[]);
        },
      );
      if (typeof callback !== 'function') return result as never;
      // The callback form (pg's pool, pg-boss) answers through it, and returns nothing.
      result.then(
        (rows) => (callback as (e: Error | null, r?: QueryResult) => void)(null, rows),
        (error: Error) => (callback as (e: Error | null) => void)(error),
      );
      return undefined as never;
    }

    private nameFor(text: string): string | null {
      const known = this.prepared.get(text);
      if (known) return known;
      if (this.prepared.size >= cacheSize || this.refused.has(text)) return null;
      if (!this.seenOnce.has(text)) {
        if (this.seenOnce.size >= cacheSize * 4) this.seenOnce.clear();
        this.seenOnce.add(text);
        return null;
      }
      this.seenOnce.delete(text);
      const name = statementName(text);
      this.prepared.set(text, name);
      return name;
    }
  } as unknown as typeof Client;
}
