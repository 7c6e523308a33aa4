// A promise bounded in time: what waits on something that may never settle (a storage
// ping, the app's start) waits at most this long, then fails with `message`.

/** `promise`, or a rejection with `message` once `ms` pass; the timer goes with it. */
export function withDeadline<T>(promise: PromiseLike<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
