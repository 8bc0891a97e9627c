/** The standard normal's 97.5% quantile (simple-statistics' probit is an approximation good to 3 places). */
export const Z975 = 1.959963984540054;

/**
 * The 97.5% quantile of Student's t with `df` degrees of freedom: exact for 1 and 2, Hill's
 * Cornish-Fisher expansion above (within 0.03 at 3, closer beyond); no maintained package has it.
 */
export function studentT975(df: number): number {
  if (df === 1) return 12.706204736174705;
  if (df === 2) return 4.302652729749464;
  const z = Z975;
  const g1 = (z ** 3 + z) / 4;
  const g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96;
  const g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384;
  const g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160;
  return z + g1 / df + g2 / df ** 2 + g3 / df ** 3 + g4 / df ** 4;
}
