/**
 * Rows as left-aligned columns two spaces apart, a line each (without line breaks): the first pass
 * over `rows` measures the columns, the second writes them, so rows made on the fly are never all
 * held. `rows` must give the same rows each time it is iterated.
 */
export function* tableLines(rows: Iterable<readonly string[]>): Generator<string> {
  const widths: number[] = [];
  for (const row of rows)
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  for (const row of rows)
    yield row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
}

/** tableLines as one string. */
export function table(rows: readonly (readonly string[])[]): string {
  return [...tableLines(rows)].join("\n");
}
