/**
 * Markdown for VitePress from untrusted strings. Pages are built with raw HTML off, so markdown-it
 * escapes `<`, `>` and `&` itself; what remains is Markdown syntax in text (escaped here) and Vue's
 * `{{ }}` interpolation, which `vPre` turns off for a whole page.
 */

/** Backslash-escapes every ASCII punctuation mark (CommonMark allows all of them) and folds newlines. */
export function text(value: string): string {
  return value.replace(/\s*[\r\n]+\s*/g, " ").replace(/[!-/:-@[-`{-~]/g, "\\$&");
}

function longestRun(value: string, char: string): number {
  let longest = 0;
  let run = 0;
  for (const c of value) {
    run = c === char ? run + 1 : 0;
    longest = Math.max(longest, run);
  }
  return longest;
}

/** An inline code span whose fence is longer than any backtick run inside it. */
export function code(value: string): string {
  const fence = "`".repeat(longestRun(value, "`") + 1);
  const padded = value.startsWith("`") || value.endsWith("`") ? ` ${value} ` : value;
  return `${fence}${padded.replace(/[\r\n]+/g, " ")}${fence}`;
}

/** A link whose target is a path this site generated (never user input). */
export function link(label: string, target: string): string {
  return `[${text(label)}](${target})`;
}

/** A GitHub-style table; cells are Markdown already (escape with `text`). */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
  return [line(headers), line(headers.map(() => "---")), ...rows.map(line)].join("\n");
}

/**
 * Wraps a page body in VitePress's `v-pre` container so Vue compiles none of it; the fence is
 * longer than any colon run in the body so that a container in a README cannot close it early.
 */
export function vPre(body: string): string {
  const fence = ":".repeat(Math.max(3, longestRun(body, ":") + 1));
  return `${fence} v-pre\n\n${body}\n\n${fence}\n`;
}

/** YAML front matter; JSON strings and booleans are valid YAML scalars, so no other escaping is needed. */
export function frontMatter(fields: Record<string, string | boolean>): string {
  const lines = Object.entries(fields).map(([key, value]) => `${key}: ${JSON.stringify(value)}`);
  return `---\n${lines.join("\n")}\n---\n\n`;
}

const HTML_ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** For theme config strings that VitePress renders with v-html (sidebar and prev/next text). */
export function html(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ENTITIES[c] ?? c);
}

/**
 * VitePress inlines each page's data (title, front matter) unescaped in a `<script>` block, so a
 * `</script>` in a README heading would end it; a zero-width space after `<` breaks every `</`.
 */
export function scriptSafe<T>(value: T): T {
  if (typeof value === "string") return value.replace(/<\//g, "<\u200b/") as T;
  if (Array.isArray(value)) return value.map(scriptSafe) as T;
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, scriptSafe(item)])) as T;
  }
  return value;
}
