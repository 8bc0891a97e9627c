import { posix } from "node:path";

/** Where each page lives in the generated source; VitePress turns `x.md` into `x.html`. */
export const INDEX_PAGE = "index.md";

export function portPage(id: string): string {
  return `ports/${id}.md`;
}

/** A relative Markdown link from one generated page to a port's page. */
export function portLink(fromPage: string, id: string): string {
  return pageLink(fromPage, portPage(id));
}

/** The page of platform findings: what the ports' device code works around in vllm-gaudi. */
export const FINDINGS_PAGE = "platform-findings.md";

/** Every record of every port, with filters. */
export const RECORDS_PAGE = "records.md";

/** A relative Markdown link from one generated page to another. */
export function pageLink(fromPage: string, toPage: string): string {
  const relativePath = posix.relative(posix.dirname(fromPage), toPage);
  return relativePath.startsWith(".") ? relativePath : `./${relativePath}`;
}
