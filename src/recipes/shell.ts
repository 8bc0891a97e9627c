import { BringupError } from "../common/errors.js";

/**
 * Quotes a value for POSIX sh: inside single quotes nothing expands, and a single quote is written
 * as '\'' (close, escaped quote, reopen). Hand-written because it is one line and sh's rule is fixed.
 */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * Every manifest value a recipe embeds is one printable word: a newline could end a comment or a
 * here-document early, and whitespace would split a Dockerfile instruction. Quoting handles the rest.
 */
export function assertPlainValue(field: string, value: string): string {
  if (!/^[^\s\p{Cc}]+$/u.test(value)) {
    throw new BringupError(
      "RECIPE_VALUE_UNSAFE",
      `${field} is ${JSON.stringify(value)}, which has whitespace or control characters; write it as one word in port.yaml (\`bringup ports check\` names the form each field takes).`,
      { subject: field },
    );
  }
  return value;
}

/** A value as a person would type it: bare when no character is special to sh, quoted otherwise. */
export function shellWord(value: string): string {
  return /^[A-Za-z0-9_.,:/=+@%-]+$/.test(value) ? value : shellQuote(value);
}
