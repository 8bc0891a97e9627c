import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  fixtureManifest,
  HOST_PIP,
  hashTree,
  makeImageRoot,
  NO_PIP_REASON,
  runSh,
  siteDir,
  WHEEL_NAME,
  writeDist,
  writeWheel,
} from "./fixtures/index.js";
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

const SITE = siteDir();

async function edit(root: string, path: string, from: string, to: string): Promise<void> {
  const full = join(root, path);
  const text = await readFile(full, "utf8");
  expect(text).toContain(from);
  await writeFile(full, text.replace(from, to));
}

/** A matching root in a directory whose name has a space, so paths must be quoted. */
function root(name = "image root"): Promise<string> {
  return makeImageRoot(join(work, name));
}

describe.skipIf(!HOST_PIP)(
  `generated install.sh against image roots made here${HOST_PIP ? "" : NO_PIP_REASON}`,
  () => {
    it("installs the plugin wheel next to vllm-gaudi on the matching root, records the pins and changes nothing else", async () => {
      const dir = await root();
      const result = await runSh(script, { IMAGE_ROOT: `${dir}/` }, work);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(result.stdout).toContain("installed bringup-vllm 0.0.1");
      expect(result.stdout).toContain("this recipe has not yet run on a device");
      const stamp = await readFile(join(dir, pinsStampPath("fixture-lazy")), "utf8");
      expect(stamp).toContain("package.vllm-gaudi=0.26.0\n");
      expect(stamp).toContain("gaudi_software=1.24.1-482\n");
      const site = join(dir, SITE);
      expect(await readFile(join(site, "bringup_vllm/__init__.py"), "utf8")).toBe("FIXTURE = True\n");
      expect(await readFile(join(site, "bringup_vllm-0.0.1.dist-info/entry_points.txt"), "utf8")).toContain(
        "[vllm.general_plugins]",
      );
      // Take away what install.sh added; the rest is the root as it was.
      await rm(join(dir, "etc"), { recursive: true });
      for (const name of await readdir(site)) {
        if (name.startsWith("bringup_vllm")) await rm(join(site, name), { recursive: true });
      }
      await rm(join(dir, "usr/bin/__pycache__"), { recursive: true, force: true });
      expect(await hashTree(dir)).toBe(await hashTree(await root("pristine")));
    });

    const mismatches: { kind: string; change: (dir: string) => Promise<unknown>; named: string }[] = [
      {
        kind: "Gaudi software version",
        change: (dir) =>
          edit(
            dir,
            "var/lib/dpkg/status",
            "Priority: optional\nVersion: 1.24.1-482",
            "Priority: optional\nVersion: 1.24.0-100",
          ),
        named: "Gaudi software: habanalabs-graph is 1.24.0-100, expected 1.24.1-482",
      },
      {
        kind: "Gaudi software build of the PyTorch plugin",
        change: (dir) =>
          edit(
            dir,
            `${SITE}/habana_torch_plugin-1.24.1.482.dist-info/METADATA`,
            "Version: 1.24.1.482",
            "Version: 1.24.1.99",
          ),
        named: "Gaudi software: Python package habana-torch-plugin is 1.24.1.99, expected 1.24.1.482",
      },
      {
        kind: "PyTorch release",
        change: (dir) =>
          edit(
            dir,
            `${SITE}/torch-2.11.0+hpu.fixture.dist-info/METADATA`,
            "Version: 2.11.0+hpu",
            "Version: 2.10.0+hpu",
          ),
        named:
          "PyTorch: Python package torch is 2.10.0+hpu.fixture, expected release 2.11.0 (any build suffix)",
      },
      {
        kind: "vLLM version",
        change: (dir) =>
          edit(
            dir,
            `${SITE}/vllm-0.26.0+empty.dist-info/METADATA`,
            "Version: 0.26.0+empty",
            "Version: 0.26.0",
          ),
        named: "vLLM: Python package vllm is 0.26.0, expected 0.26.0+empty",
      },
      {
        kind: "vllm-gaudi version",
        change: (dir) =>
          edit(dir, `${SITE}/vllm_gaudi-0.26.0.dist-info/METADATA`, "Version: 0.26.0", "Version: 0.24.0"),
        named: "vllm-gaudi: Python package vllm-gaudi is 0.24.0, expected 0.26.0",
      },
      {
        kind: "a missing file (the dpkg status)",
        change: (dir) => rm(join(dir, "var/lib/dpkg/status")),
        named: "Gaudi software: missing file /var/lib/dpkg/status",
      },
      {
        kind: "a missing package (vllm)",
        change: (dir) => rm(join(dir, `${SITE}/vllm-0.26.0+empty.dist-info`), { recursive: true }),
        named: "vLLM: Python package vllm is not installed for Python 3.12 (expected 0.26.0+empty;",
      },
      {
        kind: "a different Python",
        change: (dir) => rename(join(dir, "usr/bin/python3.12"), join(dir, "usr/bin/python3.11")),
        named:
          "Python: neither /usr/bin/python3.12 nor /usr/local/bin/python3.12 exists (expected Python 3.12; the image has: /usr/bin/python3.11)",
      },
      {
        kind: "a package only in a later site-packages directory",
        change: (dir) => rm(join(dir, `${SITE}/vllm_gaudi-0.26.0.dist-info`), { recursive: true }),
        named: "vllm-gaudi: Python package vllm-gaudi is 9.9.9, expected 0.26.0",
      },
      {
        kind: "no plugin wheel",
        change: (dir) => rm(join(dir, "opt/bringup/wheels", WHEEL_NAME)),
        named: "device plugin: no bringup_vllm-*.whl in /opt/bringup/wheels",
      },
      {
        kind: "two plugin wheels",
        change: (dir) => writeWheel(join(dir, "opt/bringup/wheels"), "bringup_vllm-0.0.2-py3-none-any.whl"),
        named: "device plugin: 2 wheels in /opt/bringup/wheels, expected exactly one",
      },
      {
        kind: "a plugin already installed",
        change: (dir) => writeDist(join(dir, SITE), "bringup_vllm", "0.0.0"),
        named: `device plugin: bringup-vllm 0.0.0 is already installed in /${SITE}; build FROM the stock image`,
      },
    ];

    for (const { kind, change, named } of mismatches) {
      it(`refuses ${kind}, naming it, and changes nothing`, async () => {
        const dir = await root();
        await change(dir);
        const before = await hashTree(dir);
        const result = await runSh(script, { IMAGE_ROOT: dir }, work);
        expect(result.code).toBe(1);
        expect(result.stderr).toContain(`install.sh: mismatch: ${named}`);
        expect(result.stderr).toContain("install.sh: 1 mismatch(es)");
        expect(result.stderr).toContain("so nothing was changed");
        expect(await hashTree(dir)).toBe(before);
      });
    }

    it("names every mismatch at once", async () => {
      const dir = await root();
      const chosen = [mismatches[0], mismatches[2], mismatches[4], mismatches[9]];
      for (const mismatch of chosen) await mismatch?.change(dir);
      const before = await hashTree(dir);
      const result = await runSh(script, { IMAGE_ROOT: dir }, work);
      expect(result.code).toBe(1);
      const named = result.stderr.split("\n").filter((line) => line.startsWith("install.sh: mismatch: "));
      expect(named).toHaveLength(chosen.length);
      for (const [i, mismatch] of chosen.entries()) {
        expect(named[i]).toContain(`install.sh: mismatch: ${mismatch?.named}`);
      }
      expect(result.stderr).toContain("install.sh: 4 mismatch(es)");
      expect(await hashTree(dir)).toBe(before);
    });

    it("refuses an empty root, naming each thing it looked for, and writes nothing", async () => {
      const dir = join(work, "empty");
      await mkdir(dir);
      const result = await runSh(script, { IMAGE_ROOT: dir }, work);
      expect(result.code).toBe(1);
      const named = result.stderr.split("\n").filter((line) => line.startsWith("install.sh: mismatch: "));
      expect(named.map((line) => line.split(":")[2]?.trim())).toEqual([
        "Gaudi software",
        "Python",
        "Gaudi software",
        "PyTorch",
        "vLLM",
        "vllm-gaudi",
        "device plugin",
      ]);
      expect(await readdir(dir)).toEqual([]);
    });

    it("offers no way to skip the checks", async () => {
      expect(await readFile(script, "utf8")).not.toMatch(/--force|FORCE|SKIP_CHECK/);
    });
  },
);
