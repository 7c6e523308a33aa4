// Work over a whole catalog (validation, the diff, a snapshot) is written once, as a
// generator that pauses (yields) every few hundred entries: a command runs it to the end
// at once (toEnd), the server a slice per event-loop turn (inTurns), so that an instance
// applying a catalog of 20,000 plans keeps answering other requests meanwhile.
export type Steps<T> = Generator<void, T, void>;

/** How many entries a step looks at before it pauses. */
export const ENTRIES_PER_TURN = 250;

/** Whether to pause after the entry at `index` (every ENTRIES_PER_TURN). */
export const pauseAfter = (index: number): boolean => index % ENTRIES_PER_TURN === ENTRIES_PER_TURN - 1;

export function toEnd<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}

export async function inTurns<T>(steps: Steps<T>): Promise<T> {
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
    await new Promise(setImmediate);
  }
}
