import type { BenchRecord, Figure } from "./record.js";

/** The numbers a stated figure holds. */
export function figureNumbers(figure: Figure): number[] {
  switch (figure.shape) {
    case "point":
    case "at-most":
    case "at-least":
      return [figure.value];
    case "range":
      return [figure.low, figure.high];
    case "fraction":
      return [figure.passed, figure.total];
  }
}

/**
 * Every number a record states: arm samples and figures, the comparison's figure, interval and
 * spread. Prose may quote any of them, so this is what backs a figure written in a port's page.
 */
export function recordNumbers(record: BenchRecord): number[] {
  const numbers: number[] = [];
  for (const arm of record.arms) {
    numbers.push(...arm.samples);
    if (arm.figure) numbers.push(...figureNumbers(arm.figure));
  }
  const comparison = record.comparison;
  if (comparison) {
    numbers.push(...figureNumbers(comparison.figure));
    if (comparison.ci95) numbers.push(...comparison.ci95);
    if (comparison.cv !== undefined) numbers.push(comparison.cv);
  }
  return numbers;
}
