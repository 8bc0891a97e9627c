import { mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { copyImageRoot, fixtureManifest, hashTree, runSh } from "./fixtures/index.js";
import { generateRecipe } from "./generate.js";
import { pinsStampPath } from "./install-script.js";

let work: string;
let script: string;

beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), "bringup-install-"));
  const file = generateRecipe(await fixtureManifest("complete-lazy")).find(
    (f) => f.path === "recipe/install.sh",
  );
  script = join(work, "install.sh");
  await writeFile(script, file?.content ?? "");
});

afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

const SITE = "usr/local/lib/python3.12/dist-packages";

async function edit(root: string, path: string, from: string, to: string): Promise<void> {
  const full = join(root, path);
  const text = await readFile(full, "utf8");
  expect(text).toContain(from);
  await writeFile(full, text.replace(from, to));
}

/** Copies the matching root into a directory whose name has a space, so paths must be quoted. */
async function root(): Promise<string> {
  return copyImageRoot(join(work, "image root"));
}

describe("generated install.sh against fixture image roots", () => {
  // The matching root also spells one package differently from its pin (fixture_extra.pkg against
  // Fixture-Extra.Pkg), which pip treats as the same name.
  it("passes on the matching root and changes only its pins record", async () => {
    const dir = await root();
    const result = await runSh(script, { IMAGE_ROOT: `${dir}/` }, work);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const stamp = await readFile(join(dir, pinsStampPath("fixture-lazy")), "utf8");
    expect(stamp).toContain("package.vllm-gaudi=0.0.2\n");
    expect(stamp).toContain("gaudi_software=1.24.1-100\n");
    await rm(join(dir, "etc"), { recursive: true });
    expect(await hashTree(dir)).toBe(await hashTree(await copyImageRoot(join(work, "pristine"))));
  });

  const mismatches: { kind: string; change: (dir: string) => Promise<void>; named: string }[] = [
    {
      kind: "Gaudi software version",
      change: (dir) =>
        edit(
          dir,
          "var/lib/dpkg/status",
          "Version: 1.24.1-100\nDescription: fixture entry\n\nPackage: python3.12",
          "Version: 1.23.0-100\nDescription: fixture entry\n\nPackage: python3.12",
        ),
      named: "Gaudi software: habanalabs-graph is 1.23.0-100, expected 1.24.1-100",
    },
    {
      kind: "Gaudi software build of the PyTorch plugin",
      change: (dir) =>
        edit(
          dir,
          `${SITE}/habana_torch_plugin-1.24.1.100.dist-info/METADATA`,
          "Version: 1.24.1.100",
          "Version: 1.24.1.99",
        ),
      named: "Gaudi software: Python package habana-torch-plugin is 1.24.1.99, expected 1.24.1.100",
    },
    {
      kind: "vllm-gaudi version",
      change: (dir) =>
        edit(dir, `${SITE}/vllm_gaudi-0.0.2.dist-info/METADATA`, "Version: 0.0.2", "Version: 0.0.3"),
      named: "vllm-gaudi: Python package vllm-gaudi is 0.0.3, expected 0.0.2",
    },
    {
      kind: "a Python package version",
      change: (dir) =>
        edit(dir, `${SITE}/transformers-0.0.4.dist-info/METADATA`, "Version: 0.0.4", "Version: 0.0.40"),
      named: "port dependency: Python package transformers is 0.0.40, expected 0.0.4",
    },
    {
      kind: "a missing file (the dpkg status)",
      change: (dir) => rm(join(dir, "var/lib/dpkg/status")),
      named: "Gaudi software: missing file /var/lib/dpkg/status",
    },
    {
      kind: "a missing file (vllm's metadata)",
      change: (dir) => rm(join(dir, `${SITE}/vllm-0.0.1+fixture.dist-info`), { recursive: true }),
      named: "vLLM: Python package vllm is not installed for Python 3.12 (expected 0.0.1+fixture;",
    },
    {
      kind: "a different Python",
      change: async (dir) => {
        await rename(join(dir, "usr/bin/python3.12"), join(dir, "usr/bin/python3.11"));
        await rename(join(dir, "usr/local/lib/python3.12"), join(dir, "usr/local/lib/python3.11"));
      },
      named:
        "Python: neither /usr/bin/python3.12 nor /usr/local/bin/python3.12 exists (expected Python 3.12; the image has: /usr/bin/python3.11)",
    },
    {
      kind: "a package only in a later site-packages directory",
      change: (dir) => rm(join(dir, `${SITE}/vllm_gaudi-0.0.2.dist-info`), { recursive: true }),
      named: "vllm-gaudi: Python package vllm-gaudi is 9.9.9, expected 0.0.2",
    },
  ];

  for (const { kind, change, named } of mismatches) {
    it(`fails on ${kind}, naming it, and changes nothing`, async () => {
      const dir = await root();
      await change(dir);
      const before = await hashTree(dir);
      const result = await runSh(script, { IMAGE_ROOT: dir }, work);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`install.sh: mismatch: ${named}`);
      expect(result.stderr).toContain("so nothing was changed");
      expect(await hashTree(dir)).toBe(before);
    });
  }

  it("names every mismatch at once", async () => {
    const dir = await root();
    await mismatches[0]?.change(dir);
    await mismatches[2]?.change(dir);
    await mismatches[3]?.change(dir);
    const before = await hashTree(dir);
    const result = await runSh(script, { IMAGE_ROOT: dir }, work);
    expect(result.code).toBe(1);
    const named = result.stderr.split("\n").filter((line) => line.startsWith("install.sh: mismatch: "));
    expect(named).toEqual([
      `install.sh: mismatch: ${mismatches[0]?.named}`,
      `install.sh: mismatch: ${mismatches[2]?.named}`,
      `install.sh: mismatch: ${mismatches[3]?.named}`,
    ]);
    expect(result.stderr).toContain("install.sh: 3 mismatch(es)");
    expect(await hashTree(dir)).toBe(before);
  });

  it("offers no way to skip the checks", () => {
    return readFile(script, "utf8").then((text) => {
      expect(text).not.toMatch(/--force|FORCE|SKIP_CHECK/);
    });
  });
});
