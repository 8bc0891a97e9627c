import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PortManifest } from "../catalog/index.js";
import {
  fixtureManifest,
  HOST_PIP,
  hashTree,
  makeImageRoot,
  NO_PIP_REASON,
  runSh,
} from "./fixtures/index.js";
import { generateRecipe } from "./generate.js";
import { PLATFORM } from "./platform.js";

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

describe("values with shell metacharacters", () => {
  it("are rejected by the manifest schema in every manifest field a recipe uses", async () => {
    const base = await fixtureManifest("complete-lazy");
    const attempts: [field: string, path: string, value: unknown][] = [
      ["software.serve_env", "software.serve_env", { "A;id": "1" }],
      ["software.serve_env.A", "software.serve_env", { A: "$(id)" }],
      ["software.gaudi_software", "software.gaudi_software", "1.24.1;id"],
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

  it.skipIf(!HOST_PIP)(
    `stay inert in the generated install.sh when platform pins carry them${HOST_PIP ? "" : NO_PIP_REASON}`,
    async () => {
      const platform = structuredClone(PLATFORM);
      const vllm = platform.packages.find((pkg) => pkg.name === "vllm");
      if (vllm === undefined) throw new Error("the platform pins vllm");
      vllm.value = PAYLOAD;
      platform.packages.push({ ...vllm, name: "a$(>pwned-name)", role: "extra", value: PAYLOAD });
      const file = generateRecipe(await fixtureManifest("complete-lazy"), platform).find(
        (f) => f.path === "recipe/install.sh",
      );
      const script = join(work, "install.sh");
      await writeFile(script, file?.content ?? "");
      const root = await makeImageRoot(join(work, "root"));
      const before = await hashTree(root);
      const result = await runSh(script, { IMAGE_ROOT: root }, work);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`vLLM: Python package vllm is 0.26.0+empty, expected ${PAYLOAD}`);
      expect(result.stderr).toContain("Python package a$(>pwned-name) is not installed");
      expect((await readdir(work)).filter((name) => name.startsWith("pwned"))).toEqual([]);
      expect(await hashTree(root)).toBe(before);
    },
  );

  it("with whitespace are refused before any file is written", async () => {
    const platform = { ...PLATFORM, image: { ...PLATFORM.image, value: "img:1\nRUN id" } };
    const manifest = await fixtureManifest("complete-lazy");
    expect(() => generateRecipe(manifest, platform)).toThrow(/whitespace or control characters/);
  });
});
