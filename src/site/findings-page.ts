import type { Catalog } from "../catalog/index.js";
import { PLATFORM, PLATFORM_FINDINGS, type PlatformFinding } from "../recipes/index.js";
import { frontMatter, link, text, vPre } from "./markdown.js";
import { FINDINGS_PAGE, pageLink, portLink } from "./paths.js";

export const FINDINGS_TITLE = "Platform findings";

/** A source as a Markdown link; its title is escaped, its URL is one of the findings' own. */
function source(from: { title: string; url: string }): string {
  return `[${text(from.title)}](${from.url})`;
}

function section(finding: PlatformFinding, catalog: Catalog): string {
  const ports = finding.ports
    .map((id) => catalog.ports.find((port) => port.id === id))
    .filter((port) => port !== undefined)
    .map((port) => link(port.manifest.model.name, portLink(FINDINGS_PAGE, port.id)));
  return [
    `## ${text(finding.title)} {#${finding.id}}`,
    "",
    text(finding.finding),
    "",
    `**What the device code does.** ${text(finding.workaround)}`,
    "",
    `**Ports.** ${ports.length > 0 ? ports.join(", ") : "none yet"}`,
    "",
    "**Sources.**",
    "",
    ...finding.sources.map((from) => `- ${source(from)}`),
  ].join("\n");
}

/** The platform findings page: each thing the ports' device code works around in vllm-gaudi, with its sources. */
export function renderFindingsPage(catalog: Catalog): string {
  const { row } = PLATFORM;
  const body = [
    `# ${FINDINGS_TITLE}`,
    "",
    text(
      `What the ports' device code has to work around in vllm-gaudi ${row.vllmGaudi} on Gaudi software ${row.gaudiSoftware}, the release the recipes pin. Each finding was read in vllm-gaudi's source and links the lines that show it. None was observed on a device: no recipe has run on one yet, and a device run may add findings or change these.`,
    ),
    "",
    ...PLATFORM_FINDINGS.flatMap((finding) => [section(finding, catalog), ""]),
  ].join("\n");
  return frontMatter({ title: FINDINGS_TITLE }) + vPre(body);
}

/** The findings that apply to a port, as links from its page; nothing when none does. */
export function portFindings(portId: string, fromPage: string): string[] {
  const applying = PLATFORM_FINDINGS.filter((finding) => finding.ports.includes(portId));
  if (applying.length === 0) return [];
  const links = applying.map(
    (finding) => `[${text(finding.title)}](${pageLink(fromPage, FINDINGS_PAGE)}#${finding.id})`,
  );
  return [
    `${text("What its device code works around in vllm-gaudi (platform findings):")} ${links.join("; ")}.`,
  ];
}
