import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findPort, loadCatalog, type Reference } from "../catalog/index.js";
import { describeReferencePlan } from "./reference-builds.js";

const REPO = join(import.meta.dirname, "../..");

async function referenceOf(id: string): Promise<Reference> {
  const reference = findPort(await loadCatalog(REPO), id).manifest.reference;
  if (reference === undefined) throw new Error(`${id} has no reference section`);
  return reference;
}

describe("the plan a bring-up announces", () => {
  it("names each A/B by its own arms, not by the build and the baseline the gates compare", async () => {
    const plan = describeReferencePlan("kimi-k2.7-code", await referenceOf("kimi-k2.7-code"));
    expect(plan).toContain("1 A/B: decode_tok_s, fused MXFP4 experts against unpacked MXFP4 experts");
    expect(plan).not.toMatch(/A\/B; /);
  });

  it("names the KV layouts an A/B of layouts compares", async () => {
    const plan = describeReferencePlan("mimo-v2.6-flash", await referenceOf("mimo-v2.6-flash"));
    expect(plan).toMatch(
      /^mimo-v2\.6-flash: 3 gates on the window-sized KV layout \(baseline full\); 1 A\/B: decode_tok_s, .*window-sized.* against .*full/,
    );
  });
});
