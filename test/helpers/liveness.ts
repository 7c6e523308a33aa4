// Whether an instance stays responsive while it works on something: /healthz is asked
// every 10 ms over its own connection for as long as the work runs, and the slowest answer
// is reported. A request that holds the event loop shows up as a slow /healthz.
import { Agent, request } from 'undici';

/**
 * The slowest /healthz answer an instance may give while other work runs. The tests share
 * two cores with a second test file and PostgreSQL, which alone can delay an answer by a
 * couple of hundred milliseconds; the stalls this catches (work that holds the event loop)
 * last seconds.
 */
export const LIVENESS_BOUND_MS = 400;

export interface Liveness<T> {
  result: T;
  /** The slowest /healthz answer seen meanwhile, in milliseconds. */
  slowestMs: number;
  /** How many /healthz answers were seen (at least one: the last starts after the work ends). */
  answers: number;
}

export async function whileWorking<T>(base: string, work: () => Promise<T>): Promise<Liveness<T>> {
  const agent = new Agent({ connections: 1 });
  // One answer first, so the connection exists before the work starts.
  await (await request(`${base}/healthz`, { dispatcher: agent })).body.text();
  let done = false;
  let slowestMs = 0;
  let answers = 0;
  const poll = (async () => {
    do {
      const started = performance.now();
      const res = await request(`${base}/healthz`, { dispatcher: agent });
      await res.body.text();
      if (res.statusCode !== 200) throw new Error(`/healthz answered ${res.statusCode}`);
      slowestMs = Math.max(slowestMs, performance.now() - started);
      answers += 1;
      await new Promise((r) => setTimeout(r, 10));
    } while (!done);
  })();
  try {
    const result = await work();
    done = true;
    await poll;
    return { result, slowestMs, answers };
  } finally {
    done = true;
    await poll.catch(() => undefined);
    await agent.close();
  }
}
