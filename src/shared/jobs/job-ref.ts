/** A durable record and the job that carries it: a record is started only for the job it is on. */
export interface JobRef {
  id: string;
  jobId: string;
}
