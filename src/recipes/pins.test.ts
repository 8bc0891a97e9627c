import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { PortManifest } from "../catalog/index.js";
import { BringupError } from "../common/errors.js";
import { fixtureManifest } from "./fixtures/index.js";
import { recipePins, resolveRecipe } from "./pins.js";
import { PLATFORM } from "./platform.js";

function refusal(run: () => unknown): BringupError {
  try {
    run();
  } catch (error) {
    if (error instanceof BringupError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("platform pins", () => {
  it("say where every value comes from, and none claims a device no one has used", async () => {
    const pins = recipePins(resolveRecipe(await fixtureManifest("complete-lazy")));
    expect(pins).toHaveLength(7);
    for (const { name, pin } of pins) {
      expect(pin.origin.kind, name).toBe("public-source");
      if (pin.origin.kind === "public-source") expect(pin.origin.url, name).toMatch(/^https:\/\//);
    }
    expect(PLATFORM.deviceRuns).toEqual({});
  });

  it("follow one row of the compatibility matrix: image, Gaudi plugin, torch and the built tags agree", () => {
    const { row } = PLATFORM;
    expect(PLATFORM.image.value).toBe(
      `vault.habana.ai/gaudi-docker/${row.gaudiSoftware}/ubuntu24.04/habanalabs/pytorch-installer-${row.pytorch}:latest`,
    );
    const version = (name: string) => PLATFORM.packages.find((pkg) => pkg.name === name)?.value;
    expect(version("habana-torch-plugin")).toBe(`${row.gaudiSoftware}.${PLATFORM.gaudiBuild.value}`);
    expect(version("torch")).toBe(row.pytorch);
    expect(version("vllm-gaudi")).toBe(row.vllmGaudi);
    expect(version("vllm")).toBe(`${row.vllmGaudi}+empty`);
    expect(PLATFORM.builds.vllm.ref).toBe(`v${row.vllmGaudi}`);
    expect(PLATFORM.builds.vllmGaudi.ref).toBe(`v${row.vllmGaudi}`);
  });
});

describe("resolveRecipe", () => {
  it("gives every seed port with engine model code a recipe and refuses the others by code", async () => {
    const ports = join(import.meta.dirname, "../../ports");
    const ids = (await readdir(ports, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    const withRecipe: string[] = [];
    for (const id of ids) {
      const manifest = PortManifest.parse(parse(await readFile(join(ports, id, "port.yaml"), "utf8")));
      if (manifest.reference === undefined) {
        expect(refusal(() => resolveRecipe(manifest)).code, id).toBe("RECIPE_NO_MODEL_CODE");
      } else {
        expect(resolveRecipe(manifest).port).toBe(id);
        withRecipe.push(id);
      }
    }
    expect(withRecipe.sort()).toEqual([
      "beam-1.0-501b-a23b",
      "deepseek-v4.1-flash",
      "glm-5-mxfp4",
      "glm-5.3-flash",
      "inkling-small",
      "kimi-k2.7-code",
      "mimo-v2.6-flash",
      "mimo-v2.6-pro",
      "minimax-m3",
      "muse-glimmer-30b",
      "muse-spark-open",
    ]);
  });

  it("takes the packages from the platform and the serving from the manifest", async () => {
    const recipe = resolveRecipe(await fixtureManifest("complete-lazy"));
    expect(recipe.packages.map((pkg) => `${pkg.normalized}==${pkg.value} (${pkg.match})`)).toEqual([
      "habana-torch-plugin==1.24.1.482 (exact)",
      "torch==2.11.0 (release)",
      "vllm==0.26.0+empty (exact)",
      "vllm-gaudi==0.26.0 (exact)",
    ]);
    expect(recipe.maxModelLen).toBe(262144);
    expect(recipe.tinyMaxModelLen).toBe(2048);
    expect(recipe.cards).toBe(8);
    expect(recipe.deviceRuns).toEqual([]);
  });

  it("refuses a port on another Gaudi release than the platform's", async () => {
    const manifest = await fixtureManifest("complete-lazy");
    manifest.software.gaudi_software = "1.23.0";
    const error = refusal(() => resolveRecipe(manifest));
    expect(error.code).toBe("RECIPE_PLATFORM_MISMATCH");
    expect(error.message).toContain("src/recipes/platform.ts");
  });

  it("refuses a port without engine model code, and a multi-node target", async () => {
    const none = await fixtureManifest("no-model-code");
    expect(refusal(() => resolveRecipe(none)).code).toBe("RECIPE_NO_MODEL_CODE");
    const manifest = await fixtureManifest("complete-lazy");
    manifest.target.nodes = 2;
    expect(refusal(() => resolveRecipe(manifest)).code).toBe("RECIPE_MULTI_NODE");
  });
});
