import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';

/** A delivery as the receiver got it: the raw body and the headers. */
export interface Received {
  path: string;
  body: string;
  headers: IncomingHttpHeaders;
  at: number;
}

export type Answer = { status: number; headers?: Record<string, string>; body?: string };

/** A webhook receiver on loopback: records every request and answers what the test scripts per path. */
export class Receiver {
  readonly received: Received[] = [];
  private readonly answers = new Map<string, Answer[]>();
  private server!: Server;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '/';
        this.received.push({ path, body: Buffer.concat(chunks).toString('utf8'), headers: req.headers, at: Date.now() });
        const answer = this.answers.get(path)?.shift() ?? { status: 204 };
        res.writeHead(answer.status, answer.headers ?? {});
        res.end(answer.body ?? '');
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** The next answers on `path`, in order; afterwards 204. */
  script(path: string, ...answers: Answer[]): void {
    this.answers.set(path, answers);
  }

  on(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
