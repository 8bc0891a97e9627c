/** True when a ratio's 95% interval holds 1: the run did not show that either arm is better. */
export function showsNoDifference(interval: readonly [number, number]): boolean {
  return interval[0] <= 1 && interval[1] >= 1;
}

/**
 * The rule for an A/B's headline: an interval whose upper bound is more than this many times its
 * lower bound is too wide to headline its ratio, even when it excludes 1.
 */
export const NOISY_INTERVAL_SPAN = 1.25;

/** How an A/B's ratio may be stated, by its 95% interval. */
export type AbVerdict = "no-difference" | "noisy" | "shown";

/**
 * "no-difference" when the interval holds 1; "noisy" when it excludes 1 but spans more than
 * NOISY_INTERVAL_SPAN (upper over lower bound); else "shown".
 */
export function abVerdict(interval: readonly [number, number]): AbVerdict {
  if (showsNoDifference(interval)) return "no-difference";
  return interval[1] / interval[0] > NOISY_INTERVAL_SPAN ? "noisy" : "shown";
}

/** The words that go before an A/B's ratio: "no difference was shown: ", "noisy: ", or none. */
export function verdictWords(interval: readonly [number, number]): string {
  const verdict = abVerdict(interval);
  if (verdict === "no-difference") return "no difference was shown: ";
  if (verdict === "noisy")
    return `noisy (95% interval spans ${(interval[1] / interval[0]).toFixed(2)}x, over ${NOISY_INTERVAL_SPAN}x): `;
  return "";
}
