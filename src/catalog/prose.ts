/**
 * Reading a port page's prose: figure references (`[[fig:<record-id>]]`) and numbers written with
 * a measurement unit, which must come from a record rather than be typed by hand.
 */

export interface FigureRef {
  id: string;
  line: number;
}

export interface UnitFigure {
  /** The figure as written, e.g. `5.33x` or `2177 to 356 s`. */
  text: string;
  value: number;
  /** Digits written after the decimal point; the precision a backing record must agree to. */
  decimals: number;
  unit: string;
  line: number;
}

const FIGURE_REF = /\[\[fig:([^\]\n]*)\]\]/g;

// A number not glued to a word or a version: "1.24.1" and "FP8" yield nothing, "5.33x" yields 5.33.
const NUMBER = /(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w.]*\d)/g;

// Longer spellings first, since the alternation takes the first that matches.
const SPACED_UNIT =
  /^ ?(tok\/s|tokens\/s|tokens per second|req\/s|requests\/s|milliseconds|ms|µs|seconds|sec|s|minutes|min|GiB\/s|GiB|GB\/s|GB|MiB|TiB|percent|%|×)(?![\w/])/;
// A ratio's "x" counts only when glued to the number ("5.33x"), so "2 x 4 cards" is not a figure.
const GLUED_RATIO = /^(x)(?![\w/])/;

// Words that join the numbers of one figure: "22 to 24 tok/s", "1.35-1.55x", "2, 4 and 8 ms".
const JOINER = /^\s*(?:to|and|or|vs\.?|versus|–|—|-|,)\s*$/;

/** Lines that are prose: fenced code blocks are dropped (their lines kept blank so numbering holds). */
function proseLines(markdown: string): string[] {
  let fence: string | undefined;
  return markdown.split("\n").map((line) => {
    const marker = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (marker !== undefined) {
      if (fence === undefined) fence = marker[0];
      else if (marker[0] === fence) fence = undefined;
      return "";
    }
    if (fence !== undefined) return "";
    // Inline code and HTML comments are not prose either; keep offsets by blanking them.
    return line
      .replace(/(`+)[^`]*?\1/g, (span) => " ".repeat(span.length))
      .replace(/<!--.*?-->/g, (c) => " ".repeat(c.length));
  });
}

export function figureRefs(markdown: string): FigureRef[] {
  const refs: FigureRef[] = [];
  for (const [index, line] of proseLines(markdown).entries()) {
    for (const match of line.matchAll(FIGURE_REF)) refs.push({ id: match[1] ?? "", line: index + 1 });
  }
  return refs;
}

/** Every number written with a unit, including the numbers a unit is shared by ("2177 to 356 s"). */
export function unitFigures(markdown: string): UnitFigure[] {
  const figures: UnitFigure[] = [];
  for (const [index, raw] of proseLines(markdown).entries()) {
    const line = raw.replace(FIGURE_REF, (ref) => " ".repeat(ref.length));
    const numbers = [...line.matchAll(NUMBER)].map((match) => ({
      start: match.index,
      end: match.index + match[0].length,
      value: Number((match[1] ?? "").replaceAll(",", "") + (match[2] ? `.${match[2]}` : "")),
      decimals: match[2]?.length ?? 0,
    }));
    // Right to left, so a number can take the unit of the one its joiner leads to.
    const units: (string | undefined)[] = new Array(numbers.length).fill(undefined);
    const spans: number[] = numbers.map((number) => number.end);
    for (let i = numbers.length - 1; i >= 0; i--) {
      const number = numbers[i];
      if (!number) continue;
      const after = line.slice(number.end);
      const unit = SPACED_UNIT.exec(after) ?? GLUED_RATIO.exec(after);
      if (unit?.[1]) {
        units[i] = unit[1];
        spans[i] = number.end + unit[0].length;
        continue;
      }
      const next = numbers[i + 1];
      if (next && units[i + 1] && JOINER.test(line.slice(number.end, next.start))) {
        units[i] = units[i + 1];
        spans[i] = spans[i + 1] ?? next.end;
      }
    }
    for (const [i, number] of numbers.entries()) {
      const unit = units[i];
      if (!unit) continue;
      figures.push({
        text: line.slice(number.start, spans[i]).trim(),
        value: number.value,
        decimals: number.decimals,
        unit,
        line: index + 1,
      });
    }
  }
  return figures;
}

/** True when some stated number equals the written one to the precision it was written with. */
export function isBacked(
  figure: Pick<UnitFigure, "value" | "decimals">,
  numbers: readonly number[],
): boolean {
  const tolerance = 0.5 * 10 ** -figure.decimals + 1e-9;
  return numbers.some((number) => Math.abs(Math.abs(number) - figure.value) <= tolerance);
}
