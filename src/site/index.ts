export { type BuiltSite, buildSite, SITE_MARKER } from "./build.js";
export {
  formatFigure,
  formatMethod,
  formatRecordFigure,
  formatValue,
  METHOD_LABELS,
} from "./figure.js";
export { inventoryCatalog, type PortFiles } from "./inventory.js";
export { type ServeOptions, type SiteServer, serveSite } from "./serve.js";
export { renderSite, type SitePage, type SiteSource } from "./site.js";
export { sweepCharts } from "./sweep-chart.js";
