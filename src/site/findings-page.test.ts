import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadCatalog } from "../catalog/index.js";
import { PLATFORM, PLATFORM_FINDINGS } from "../recipes/index.js";
import { portFindings, renderFindingsPage } from "./findings-page.js";

const ROOT = join(import.meta.dirname, "../..");

describe("platform findings", () => {
  it("each name ports with engine model code and cite sources at the pinned releases", async () => {
    const catalog = await loadCatalog(ROOT);
    const withCode = new Set(
      catalog.ports.filter((p) => p.manifest.reference !== undefined).map((p) => p.id),
    );
    const release = `v${PLATFORM.row.vllmGaudi}`;
    for (const finding of PLATFORM_FINDINGS) {
      expect(finding.ports.length, finding.id).toBeGreaterThan(0);
      for (const id of finding.ports) expect(withCode.has(id), `${finding.id}: ${id}`).toBe(true);
      expect(finding.sources.length, finding.id).toBeGreaterThan(0);
      for (const source of finding.sources) {
        expect(source.url, finding.id).toMatch(
          new RegExp(
            `^https://github\\.com/vllm-project/(vllm-gaudi|vllm)/blob/${release.replaceAll(".", "\\.")}/`,
          ),
        );
      }
    }
    expect(new Set(PLATFORM_FINDINGS.map((f) => f.id)).size).toBe(PLATFORM_FINDINGS.length);
  });

  it("render as one page with an anchor per finding, linking the ports and sources", async () => {
    const page = renderFindingsPage(await loadCatalog(ROOT));
    for (const finding of PLATFORM_FINDINGS) {
      expect(page).toContain(`{#${finding.id}}`);
      for (const source of finding.sources) expect(page).toContain(`](${source.url})`);
    }
    expect(page).toContain("[GLM\\-5\\.3\\-Flash](./ports/glm-5.3-flash.md)");
    expect(page).toContain("None was observed on a device");
  });

  it("are linked from the pages of the ports they apply to", () => {
    const [line] = portFindings("glm-5.3-flash", "ports/glm-5.3-flash.md");
    expect(line).toContain("](../platform-findings.md#no-kda)");
    expect(portFindings("beam-1.0-501b-a23b", "ports/beam-1.0-501b-a23b.md")).toEqual([]);
  });
});
