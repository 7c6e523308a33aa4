// Polling for what happens on timers (heartbeats, the change feed): no fixed sleeps.
import assert from 'node:assert/strict';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `done` every 10 ms until it holds; fails naming `what` past the deadline. */
export async function until(done: () => boolean, what: string, deadlineMs = 20_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!done()) {
    if (Date.now() > end) assert.fail(`timed out waiting for: ${what}`);
    await sleep(10);
  }
}
