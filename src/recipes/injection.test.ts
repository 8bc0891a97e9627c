import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PortManifest } from "../catalog/index.js";
import { copyImageRoot, fixtureManifest, hashTree, runSh } from "./fixtures/index.js";
import { generateRecipe } from "./generate.js";

let work: string;
beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), "bringup-inject-"));
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

// Redirections create files without needing a space, which the generator would reject outright.
const PAYLOAD = "0.1$(>pwned-dollar)`>pwned-tick`';>pwned-quote;'|>pwned-pipe&>pwned-amp";

/** Sets a dotted path in a plain copy of a manifest. */
function withValue(manifest: unknown, path: string, value: unknown): unknown {
  const copy = structuredClone(manifest) as Record<string, unknown>;
  const keys = path.split(".");
  let node = copy;
  for (const key of keys.slice(0, -1)) node = node[key] as Record<string, unknown>;
  node[keys.at(-1) ?? ""] = value;
  return copy;
}

describe("manifest values with shell metacharacters", () => {
  it("are rejected by the manifest schema in every field a recipe uses", async () => {
    const base = await fixtureManifest("complete-lazy");
    const attempts: [field: string, path: string, value: unknown][] = [
      ["software.pins.vllm", "software.pins.vllm", PAYLOAD],
      ["software.pins.torch", "software.pins.torch", "2.0 ; id"],
      ["software.pins.python", "software.pins.python", "3.12$(id)"],
      ["software.pins.gaudi_build", "software.pins.gaudi_build", "100`id`"],
      ["software.pins.packages", "software.pins.packages", { "x;id": "1.0" }],
      ["software.pins.packages.transformers", "software.pins.packages", { transformers: "1'0" }],
      ["software.base_image", "software.base_image", `img@sha256:${"a".repeat(64)}\nRUN id`],
      ["software.base_image", "software.base_image", "vault.habana.ai/gaudi:1.24.1"],
      ["software.serve_env", "software.serve_env", { "A;id": "1" }],
      ["software.serve_env.A", "software.serve_env", { A: "$(id)" }],
      ["id", "id", "x;id"],
    ];
    for (const [field, path, value] of attempts) {
      const result = PortManifest.safeParse(withValue(base, path, value));
      expect(result.success, field).toBe(false);
      expect(
        result.error?.issues.map((issue) => issue.path.join(".")).some((at) => at.startsWith(field)),
      ).toBe(true);
    }
  });

  it("stay inert in the generated install.sh when a caller skips the schema", async () => {
    const manifest = await fixtureManifest("complete-lazy");
    // A library caller may pass an unvalidated manifest; the generator's quoting must still hold.
    manifest.software.pins = {
      ...manifest.software.pins,
      vllm: PAYLOAD,
      packages: { "a$(>pwned-name)": PAYLOAD },
    };
    const file = generateRecipe(manifest).find((f) => f.path === "recipe/install.sh");
    const script = join(work, "install.sh");
    await writeFile(script, file?.content ?? "");
    const root = await copyImageRoot(join(work, "root"));
    const before = await hashTree(root);
    const result = await runSh(script, { IMAGE_ROOT: root }, work);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`vLLM: Python package vllm is 0.0.1+fixture, expected ${PAYLOAD}`);
    expect(result.stderr).toContain("Python package a$(>pwned-name) is not installed");
    expect((await readdir(work)).filter((name) => name.startsWith("pwned"))).toEqual([]);
    expect(await hashTree(root)).toBe(before);
  });
});
