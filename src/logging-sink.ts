// Where log lines go: a file descriptor (stdout), written in batches.
//
// Lines are encoded into one growing Buffer as they come and written with one system
// call when BATCH_BYTES are pending, at least every FLUSH_MS, on flush() and at exit.
// Why not pino.destination (sonic-boom): it keeps pending lines as one string and asks
// for that string's UTF-8 length on every write, which flattens and scans the whole
// pending batch once per line; with its asynchronous mode each batch also crossed to a
// thread pool thread and back. BENCHMARKS.md says what the sink buys.
//
// The writes are synchronous, as pino's own default destination's are: the process
// never holds more than a batch, a graceful stop or any exit that runs Node's exit
// handlers writes every pending line, and a log reader that falls a whole pipe buffer
// behind slows the process down (backpressure) instead of letting memory grow without
// bound. A descriptor that would block (EAGAIN: a non-blocking pipe that is full) is
// retried after a short wait: no line is dropped for it. Any other failure (EPIPE: the
// reader went away) drops the pending lines and says so on stderr, at most once a minute:
// a process whose log reader is gone keeps serving rather than failing every request.
import { writeSync } from 'node:fs';

const BATCH_BYTES = 4096;
const FLUSH_MS = 250;
const RETRY_WAIT_MS = 5;
const NOTICE_EVERY_MS = 60_000;

/** The worst case of a string's UTF-8 length: three bytes per UTF-16 unit. */
const worstCase = (line: string): number => line.length * 3;

export class LineSink {
  #buf = Buffer.allocUnsafe(4 * BATCH_BYTES);
  #len = 0;
  readonly #timer: NodeJS.Timeout;
  readonly #onExit = (): void => this.flushSync();
  #noticedAt = Number.NEGATIVE_INFINITY;
  /** Lines' bytes dropped because the descriptor failed (not counting EAGAIN, retried). */
  droppedBytes = 0;

  constructor(
    private readonly fd: number,
    private readonly notice: (message: string) => void = (m) => process.stderr.write(m),
  ) {
    this.#timer = setInterval(() => this.flushSync(), FLUSH_MS).unref();
    process.on('exit', this.#onExit);
  }

  /** Appends a line (pino's DestinationStream: each call is one whole line). */
  write(line: string): boolean {
    const needed = this.#len + worstCase(line);
    if (needed > this.#buf.length) this.#grow(needed);
    this.#len += this.#buf.write(line, this.#len, 'utf8');
    if (this.#len >= BATCH_BYTES) this.flushSync();
    return true;
  }

  /** Writes every pending line (what pino's logger.flush(cb) calls). */
  flush(cb?: (err?: Error) => void): void {
    this.flushSync();
    cb?.();
  }

  /** Writes every pending line now (never throws: see the top of this file). */
  flushSync(): void {
    let done = 0;
    while (done < this.#len) {
      try {
        done += writeSync(this.fd, this.#buf, done, this.#len - done);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN') {
          Atomics.wait(SLEEP, 0, 0, RETRY_WAIT_MS);
          continue;
        }
        this.#dropped(this.#len - done, code ?? String(err));
        break;
      }
    }
    this.#len = 0;
  }

  /** Writes what is pending and stops the timer and the exit hook (tests, and a closed sink). */
  end(): void {
    this.flushSync();
    clearInterval(this.#timer);
    process.off('exit', this.#onExit);
  }

  #dropped(bytes: number, why: string): void {
    this.droppedBytes += bytes;
    const now = Date.now();
    if (now - this.#noticedAt < NOTICE_EVERY_MS) return;
    this.#noticedAt = now;
    try {
      this.notice(
        `infracat: log lines could not be written to descriptor ${this.fd} (${why}); ${bytes} bytes dropped\n`,
      );
    } catch {
      // stderr is gone too: nothing left to tell.
    }
  }

  #grow(needed: number): void {
    const next = Buffer.allocUnsafe(Math.max(needed, this.#buf.length * 2));
    this.#buf.copy(next, 0, 0, this.#len);
    this.#buf = next;
  }
}

/** A word to wait on: Atomics.wait is the synchronous sleep between retries of a full pipe. */
const SLEEP = new Int32Array(new SharedArrayBuffer(4));
