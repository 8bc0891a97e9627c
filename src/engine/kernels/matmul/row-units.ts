/**
 * How a dispatch's run of output rows is cut into the units its threads claim: units of `chunk`
 * rows, but the rows of the last `threads` chunks in units of a quarter chunk. A thread that claims
 * a dispatch's last unit leaves the others waiting until it finishes; with a quarter chunk last,
 * that wait is a quarter of what a whole chunk's would be, while most units stay whole chunks (a
 * call of the tile per unit). Each unit's rows are computed alone, so the cut changes no bits.
 */
export interface RowUnits {
  /** Rows of a unit before `tailFrom` (whole groups of four, the SIMD tile's; a multiple of 16). */
  readonly chunk: number;
  /** The row from which units cover a quarter chunk. */
  readonly tailFrom: number;
  /** Units in all. */
  readonly count: number;
}

/** The units of `rows` output rows for a dispatch on `threads` threads. */
export function rowUnits(rows: number, chunk: number, threads: number): RowUnits {
  if (chunk % 16 !== 0 || chunk <= 0)
    throw new RangeError(`a unit's rows must be a multiple of 16, got ${chunk}`);
  const whole = Math.max(0, Math.floor(rows / chunk) - threads);
  const tailFrom = whole * chunk;
  return { chunk, tailFrom, count: whole + Math.ceil((rows - tailFrom) / (chunk / 4)) };
}

/** The first row of unit `unit` (of units.count; at units.count, the first row past the last unit). */
export function unitStart(units: RowUnits, unit: number): number {
  const whole = units.tailFrom / units.chunk;
  return unit <= whole ? unit * units.chunk : units.tailFrom + (unit - whole) * (units.chunk / 4);
}
