// One delivery attempt: a POST with node:http(s), bounded in every way the receiver could
// stretch it. One deadline (WEBHOOK_TIMEOUT_MS) for all of it: connecting, sending, the
// answer's headers and what is read of its body; answer headers at most RESPONSE_HEADER_BYTES
// (more is a failure); at most RESPONSE_BODY_BYTES of the answer's body read, the rest
// never waited for. Redirects are not followed: a 3xx is a failure. The connection is
// checked where it lands (targets.ts): the lookup is ours, an address literal is checked
// before connecting, and the socket's remote address once connected.
import http from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import {
  addressProblem,
  bareHost,
  guardedLookup,
  parseTargetUrl,
  RefusedTargetError,
  type TargetPolicy,
} from './targets.js';

/** The most of a receiver's answer body read (then the connection is closed). */
export const RESPONSE_BODY_BYTES = 4096;
/** The most header bytes a receiver's answer may have. */
export const RESPONSE_HEADER_BYTES = 8192;
/** The longest error text kept in the delivery log. */
const ERROR_MAX = 300;

export interface Attempt {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Aborts the attempt (a stop): it then settles with `aborted`. */
  signal?: AbortSignal;
}

export interface AttemptResult {
  /** The receiver's status code; null when none came. */
  statusCode: number | null;
  /** Why it failed; null for a 2xx. */
  error: string | null;
  durationMs: number;
  /** Refused before connecting: where it would go is not allowed. */
  refused: boolean;
  /** Ended by `signal`, not by the receiver. */
  aborted: boolean;
}

function clip(text: string): string {
  return text.length > ERROR_MAX ? `${text.slice(0, ERROR_MAX - 1)}\u2026` : text;
}

/** One POST of `attempt`; never rejects. */
export function send(attempt: Attempt, policy: TargetPolicy): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const failed = (error: string, extra: Partial<AttemptResult> = {}): AttemptResult => ({
    statusCode: null,
    error: clip(error),
    durationMs: elapsed(),
    refused: false,
    aborted: false,
    ...extra,
  });
  const parsed = parseTargetUrl(attempt.url, policy.allowPrivate);
  if ('error' in parsed) return Promise.resolve(failed(`the URL ${parsed.error}`, { refused: true }));
  const { url } = parsed;
  const host = bareHost(url);
  if (!policy.allowPrivate && isIP(host) !== 0) {
    const problem = addressProblem(host, host);
    if (problem !== null) return Promise.resolve(failed(`refused: ${problem}`, { refused: true }));
  }
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: AttemptResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      attempt.signal?.removeEventListener('abort', onAbort);
      request.destroy();
      resolve(result);
    };
    const client = url.protocol === 'https:' ? https : http;
    const request = client.request(url, {
      method: 'POST',
      headers: { ...attempt.headers, 'content-length': String(Buffer.byteLength(attempt.body)) },
      lookup: guardedLookup(policy),
      agent: false,
      maxHeaderSize: RESPONSE_HEADER_BYTES,
    });
    const timer = setTimeout(() => finish(failed(`timed out after ${attempt.timeoutMs} ms`)), attempt.timeoutMs);
    const onAbort = (): void => finish(failed('stopped: infracat is shutting down', { aborted: true }));
    attempt.signal?.addEventListener('abort', onAbort);
    if (attempt.signal?.aborted === true) onAbort();
    // What the socket really connected to: the lookup checked the name's addresses already;
    // this holds for every way a connection can be made.
    request.on('socket', (socket: Socket) => {
      socket.once('connect', () => {
        const remote = socket.remoteAddress;
        if (policy.allowPrivate || remote === undefined) return;
        const problem = addressProblem(remote, host);
        if (problem !== null) request.destroy(new RefusedTargetError(problem));
      });
    });
    request.on('error', (err: Error & { code?: string }) => {
      if (err instanceof RefusedTargetError) finish(failed(`refused: ${err.message}`, { refused: true }));
      else
        finish(
          failed(
            err.code !== undefined && !err.message.includes(err.code) ? `${err.code}: ${err.message}` : err.message,
          ),
        );
    });
    request.on('response', (res) => {
      const status = res.statusCode ?? 0;
      let read = 0;
      const done = (): void => {
        if (status >= 200 && status < 300)
          finish({ statusCode: status, error: null, durationMs: elapsed(), refused: false, aborted: false });
        else if (status >= 300 && status < 400)
          finish(failed(`answered ${status}: redirects are not followed`, { statusCode: status }));
        else finish(failed(`answered ${status}`, { statusCode: status }));
      };
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read >= RESPONSE_BODY_BYTES) done();
      });
      res.on('end', done);
      res.on('error', done);
    });
    request.end(attempt.body);
  });
}
