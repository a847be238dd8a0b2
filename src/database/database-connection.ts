/** Where the database is, for the parts that open their own connections (the job queue). */
export class DatabaseConnection {
  constructor(
    readonly url: string,
    /**
     * PGlite (embedded, or another process's served over a socket): every connection shares one
     * session, so statements of concurrent connections would interleave. The service then uses
     * one connection for everything, the queue included, and no LISTEN/NOTIFY.
     */
    readonly singleSession: boolean,
  ) {}
}
