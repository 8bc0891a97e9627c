import type { Catalog } from "../catalog/index.js";
import { BringupError } from "../common/errors.js";
import type { SiteChart } from "./charts.js";
import { FINDINGS_TITLE, renderFindingsPage } from "./findings-page.js";
import { renderIndexPage } from "./index-page.js";
import type { PortFiles } from "./inventory.js";
import { html } from "./markdown.js";
import { FINDINGS_PAGE, INDEX_PAGE, portPage, RECORDS_PAGE } from "./paths.js";
import { renderPortPage } from "./port-page.js";
import { indexRecords } from "./record-index.js";
import { RECORDS_TITLE, renderRecordsPage } from "./records-page.js";

export interface SitePage {
  /** Path inside the VitePress source directory, e.g. `ports/kimi-k2.7-code.md`. */
  path: string;
  markdown: string;
}

export interface SiteSource {
  pages: SitePage[];
  /** Files served as they are (VitePress's public/ directory), e.g. `charts/<port>/<slug>.svg`. */
  assets: { path: string; content: string }[];
  /** The VitePress user config, plain data so it can be written as a config module. */
  config: Record<string, unknown>;
}

export const SITE_TITLE = "bringup ports";

/** Every page of the site and its VitePress config, from the catalog and the port inventory. */
export function renderSite(
  catalog: Catalog,
  files: Map<string, PortFiles>,
  charts: ReadonlyMap<string, readonly SiteChart[]> = new Map(),
): SiteSource {
  if (catalog.ports.length === 0) {
    throw new BringupError(
      "SITE_EMPTY_CATALOG",
      `no ports found under ${catalog.root}/ports; add a port (bringup ports new <id>) before building the site.`,
      { subject: catalog.root },
    );
  }
  const records = indexRecords(catalog);
  const pages: SitePage[] = [{ path: INDEX_PAGE, markdown: renderIndexPage(catalog, records, files) }];
  for (const port of catalog.ports) {
    pages.push({ path: portPage(port.id), markdown: renderPortPage(port, records, charts.get(port.id)) });
  }
  pages.push({ path: RECORDS_PAGE, markdown: renderRecordsPage(catalog) });
  pages.push({ path: FINDINGS_PAGE, markdown: renderFindingsPage(catalog) });
  const sidebar = [
    {
      text: "Ports",
      link: "/",
      items: catalog.ports.map((port) => ({
        text: html(port.manifest.model.name),
        link: `/${portPage(port.id).replace(/\.md$/, "")}`,
      })),
    },
    { text: RECORDS_TITLE, link: `/${RECORDS_PAGE.replace(/\.md$/, "")}` },
    { text: FINDINGS_TITLE, link: `/${FINDINGS_PAGE.replace(/\.md$/, "")}` },
  ];
  const config = {
    title: SITE_TITLE,
    description: "Ports of new LLM architectures, with every figure and how it was measured.",
    // Raw HTML stays off: every README and catalog string reaches the page as text.
    markdown: { html: false },
    // No favicon of its own: an empty one keeps browsers from asking for /favicon.ico (a 404).
    head: [["link", { rel: "icon", href: "data:," }]],
    // Local search: an index built with the site, searched in the browser, nothing sent anywhere.
    themeConfig: { sidebar, outline: [2, 3], search: { provider: "local" } },
    vite: { logLevel: "warn" },
  };
  const assets = [...charts.values()]
    .flat()
    .map((chart) => ({ path: `charts/${chart.file}`, content: chart.svg }));
  return { pages, assets, config };
}
