import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { PortManifest } from "../catalog/index.js";
import { BringupError } from "../common/errors.js";
import { fixtureManifest } from "./fixtures/index.js";
import { missingPins, resolveRecipe } from "./pins.js";

function refusal(run: () => unknown): BringupError {
  try {
    run();
  } catch (error) {
    if (error instanceof BringupError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("pins", () => {
  it("names every missing pin and where its value comes from", async () => {
    const manifest = await fixtureManifest("partial");
    expect(missingPins(manifest).map((pin) => pin.field)).toEqual([
      "software.base_image",
      "software.pins.gaudi_build",
      "software.pins.vllm",
      "software.pins.torch",
      "software.pins.packages",
      "model.context_length",
    ]);
    const error = refusal(() => resolveRecipe(manifest));
    expect(error.code).toBe("RECIPE_PINS_MISSING");
    expect(error.message).toContain("6 pins are missing");
    expect(error.message).toContain("docker inspect --format '{{index .RepoDigests 0}}'");
    expect(error.message).toContain("habanalabs-graph prints <version>-<build>");
    expect(error.message).toContain("pip show torch");
    expect(error.message).not.toContain("software.pins.python");
  });

  it("gives no seed port a recipe, since none states validated pins", async () => {
    const ports = join(import.meta.dirname, "../../ports");
    const ids = (await readdir(ports, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(ids.length).toBeGreaterThan(0);
    for (const id of ids) {
      const manifest = PortManifest.parse(parse(await readFile(join(ports, id, "port.yaml"), "utf8")));
      const missing = missingPins(manifest).map((pin) => pin.field);
      expect(missing, id).toContain("software.base_image");
      expect(refusal(() => resolveRecipe(manifest)).code).toBe("RECIPE_PINS_MISSING");
    }
  });

  it("resolves complete pins, the Gaudi plugin version following the Gaudi release and build", async () => {
    const recipe = resolveRecipe(await fixtureManifest("complete-lazy"));
    expect(recipe.packages.map((pkg) => `${pkg.normalized}==${pkg.version}`)).toEqual([
      "habana-torch-plugin==1.24.1.100",
      "torch==2.0.3+hpu.fixture",
      "vllm==0.0.1+fixture",
      "vllm-gaudi==0.0.2",
      "fixture-extra-pkg==0.0.5",
      "transformers==0.0.4",
    ]);
    expect(recipe.maxModelLen).toBe(262144);
    expect(recipe.cards).toBe(8);
  });

  it("refuses a package pinned twice under two spellings", async () => {
    const manifest = await fixtureManifest("complete-lazy");
    manifest.software.pins = {
      ...manifest.software.pins,
      packages: { Transformers: "1.0", transformers: "1.0" },
    };
    expect(refusal(() => resolveRecipe(manifest)).code).toBe("RECIPE_PIN_DUPLICATE");
  });

  it("refuses a multi-node target", async () => {
    const manifest = await fixtureManifest("complete-lazy");
    manifest.target.nodes = 2;
    expect(refusal(() => resolveRecipe(manifest)).code).toBe("RECIPE_MULTI_NODE");
  });
});
