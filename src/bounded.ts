// lru-cache bounded by a number of entries without setting memory aside for all of them
// at start. Its `max` option allocates its arrays for `max` entries up front (16+ bytes
// each): the four caches of a start (token verifications, rate limit windows, failed
// authentications, unknown hashes) cost ~30 ms of the cold start and several MB idle.
// `maxSize` with every entry of size 1 bounds the same count while the arrays grow with use.
/** lru-cache options that bound it to `count` entries. */
export function countBound(count: number): { maxSize: number; sizeCalculation: () => number } {
  return { maxSize: count, sizeCalculation: () => 1 };
}
