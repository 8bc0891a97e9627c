/** True when a ratio's 95% interval holds 1: the run did not show that either arm is better. */
export function showsNoDifference(interval: readonly [number, number]): boolean {
  return interval[0] <= 1 && interval[1] >= 1;
}
