import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FIXTURES_DIR, fixtureManifest, runSh } from "./fixtures/index.js";
import { generateRecipe } from "./generate.js";
import { pinsStamp, pinsStampPath } from "./install-script.js";
import { resolveRecipe } from "./pins.js";
import { NOT_SERVED_EXIT } from "./run-gates-script.js";
import type { RecipeManifest } from "./source.js";

const STAND_INS = join(FIXTURES_DIR, "stand-ins");
let work: string;
let root: string;
let runGates: string;

/** A port the OS just handed out, free for a stand-in server to take. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
    });
  });
}

async function exists(path: string): Promise<boolean> {
  return readFile(path).then(
    () => true,
    () => false,
  );
}

/** What install.sh records once the image matches: the only thing run_gates.sh reads from the root. */
async function verifiedImage(manifest?: RecipeManifest): Promise<void> {
  const recipe = resolveRecipe(manifest ?? (await fixtureManifest("complete-lazy")));
  const stamp = join(root, pinsStampPath(recipe.port));
  await mkdir(dirname(stamp), { recursive: true });
  await writeFile(stamp, `${pinsStamp(recipe)}\n`);
}

/** Writes the run_gates.sh `manifest` generates as the script the tests run. */
async function useScript(manifest: RecipeManifest): Promise<void> {
  const file = generateRecipe(manifest).find((f) => f.path === "tests/hpu/run_gates.sh");
  await writeFile(runGates, file?.content ?? "");
}

beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), "bringup-gates-"));
  runGates = join(work, "run_gates.sh");
  await useScript(await fixtureManifest("complete-lazy"));
  root = join(work, "root");
  await mkdir(root);
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

async function run(extra: Record<string, string>) {
  const port = await freePort();
  const referencePort = await freePort();
  const result = await runSh(
    runGates,
    {
      TINY_MODEL: "/weights/tiny",
      PORT: String(port),
      REFERENCE_PORT: String(referencePort),
      PYTHON: join(STAND_INS, "python"),
      BRINGUP: join(STAND_INS, "bringup"),
      IMAGE_ROOT: root,
      STAND_IN_LOG: work,
      ...extra,
    },
    work,
  );
  return { ...result, port, referencePort };
}

async function server(port: number): Promise<{ args: string[]; env: Record<string, string> }> {
  return JSON.parse(await readFile(join(work, `server-${port}.json`), "utf8"));
}

const ENV = { PT_HPU_LAZY_MODE: "1", PT_HPU_ENABLE_LAZY_COLLECTIVES: "true", VLLM_SKIP_WARMUP: "true" };

describe("generated run_gates.sh", () => {
  for (const gateStatus of [0, 3]) {
    it(`gates the tiny checkpoint on vllm-gaudi against the reference engine and exits ${gateStatus} with the gate`, async () => {
      await verifiedImage();
      const { code, port, referencePort, stderr } = await run({ STAND_IN_GATE_STATUS: String(gateStatus) });
      expect(code).toBe(gateStatus);
      expect(stderr).toContain("MODEL is not set, so only the tiny checkpoint was gated");
      const device = await server(port);
      expect(device.args.join(" ")).toBe(
        `--model /weights/tiny --served-model-name fixture-lazy --host 127.0.0.1 --port ${port} --tensor-parallel-size 1 --max-model-len 2048`,
      );
      expect(device.env).toEqual(ENV);
      expect((await server(referencePort)).args.join(" ")).toBe(
        `/weights/tiny --host 127.0.0.1 --port ${referencePort} --served-model-name fixture-lazy --max-model-len 2048`,
      );
      expect(await readFile(join(work, "gate-args"), "utf8")).toBe(
        `gate fixture-lazy --endpoint http://127.0.0.1:${port} --reference http://127.0.0.1:${referencePort} --only device-logprobs\n`,
      );
      expect(await readFile(join(work, "gate-saw"), "utf8")).toBe(
        `--endpoint http://127.0.0.1:${port}\n--reference http://127.0.0.1:${referencePort}\n`,
      );
      expect(await readFile(join(work, `server-${port}-stopped`), "utf8")).toBe("SIGTERM");
      expect(await readFile(join(work, `server-${referencePort}-stopped`), "utf8")).toBe("SIGTERM");
    });
  }

  it("then serves MODEL with the port's cards and context and runs the port's gates, exiting with the first failure", async () => {
    await verifiedImage();
    const { code, port, stderr } = await run({ MODEL: "/weights/full", STAND_IN_GATE_STATUS: "3" });
    expect(stderr).toBe("");
    expect(code).toBe(3);
    const lines = (await readFile(join(work, "gate-args"), "utf8")).split("\n");
    expect(lines[1]).toBe(`gate fixture-lazy --endpoint http://127.0.0.1:${port}`);
    // The same port served the tiny checkpoint first; its record is the last server started there.
    expect((await server(port)).args.join(" ")).toBe(
      `--model /weights/full --served-model-name fixture-lazy --host 127.0.0.1 --port ${port} --tensor-parallel-size 8 --max-model-len 262144`,
    );
    expect(await readFile(join(work, `server-${port}-stopped`), "utf8")).toBe("SIGTERM");
  });

  it("refuses to serve in an image install.sh has not verified", async () => {
    const { code, port, stderr } = await run({});
    expect(code).toBe(2);
    expect(stderr).toContain("/etc/bringup/ports/fixture-lazy.pins is missing or differs from the pins");
    expect(await exists(join(work, `server-${port}.json`))).toBe(false);
  });

  it("refuses when bringup cannot run, saying how to provide it", async () => {
    await verifiedImage();
    const { code, stderr } = await run({ BRINGUP: join(work, "no-bringup") });
    expect(code).toBe(2);
    expect(stderr).toContain("mount a bringup checkout and Node 20 into the container");
  });

  it("gives up when /health does not answer in time, stopping the servers without running the gates", async () => {
    await verifiedImage();
    const { code, port, referencePort, stderr } = await run({ STAND_IN_UNHEALTHY: "1", HEALTH_TIMEOUT: "0" });
    expect(code).toBe(1);
    expect(stderr).toContain("vllm-gaudi on the tiny checkpoint did not answer");
    expect(stderr).toContain("/health within 0 s");
    expect(await exists(join(work, "gate-args"))).toBe(false);
    expect(await readFile(join(work, `server-${port}-stopped`), "utf8")).toBe("SIGTERM");
    expect(await readFile(join(work, `server-${referencePort}-stopped`), "utf8")).toBe("SIGTERM");
  });

  it("requires TINY_MODEL", async () => {
    const { code, stderr } = await run({ TINY_MODEL: "" });
    expect(code).not.toBe(0);
    expect(stderr).toContain("set TINY_MODEL to the tiny reference checkpoint directory of the port");
  });
});

describe("generated run_gates.sh of a port whose device code vLLM does not serve", () => {
  /** The blocks fixture, its reason holding what sh would expand if the script did not quote it. */
  async function blocksManifest(): Promise<RecipeManifest> {
    const manifest = await fixtureManifest("blocks-lazy");
    const blocks = manifest.reference?.device_blocks;
    if (blocks === undefined) throw new Error("the blocks-lazy fixture lost its device_blocks");
    blocks.not_served = `${blocks.not_served} It's $(touch expanded) \`touch expanded\` 100%s.`;
    return manifest;
  }

  it(`checks the pins, then exits ${NOT_SERVED_EXIT} serving nothing, naming the port, why, and the CPU check`, async () => {
    const manifest = await blocksManifest();
    await useScript(manifest);
    await verifiedImage(manifest);
    const { code, port, referencePort, stdout, stderr } = await run({});
    expect(code).toBe(NOT_SERVED_EXIT);
    expect(stdout).toBe("");
    expect(stderr).toBe(
      "run_gates.sh: vLLM does not serve the device code of port fixture-blocks, so nothing is served or gated here (The fixture's recurrent state would need vLLM's Mamba-style cache, which vllm-gaudi's \"HPU\" backend lacks. It's $(touch expanded) `touch expanded` 100%s); its blocks are checked one by one against the reference engine on the CPU by bringup device check fixture-blocks (records fixture-blocks/device-blocks).\n",
    );
    for (const started of [`server-${port}.json`, `server-${referencePort}.json`, "gate-args", "expanded"]) {
      expect(await exists(join(work, started))).toBe(false);
    }
  });

  it("refuses an image install.sh has not verified, as the served kind does", async () => {
    const manifest = await blocksManifest();
    await useScript(manifest);
    await verifiedImage(await fixtureManifest("complete-lazy"));
    const { code, stderr } = await run({});
    expect(code).toBe(2);
    expect(stderr).toContain("/etc/bringup/ports/fixture-blocks.pins is missing or differs from the pins");
  });

  it("says in its header what it does not do and what each exit status means", async () => {
    const script = await readFile(runGates, "utf8");
    expect(script).toContain("--only device-logprobs");
    await useScript(await blocksManifest());
    const blocks = await readFile(runGates, "utf8");
    expect(blocks).not.toContain("--only device-logprobs");
    expect(blocks).not.toContain("vllm.entrypoints");
    expect(blocks).toContain(
      `# Exit status: 2 when the image's pins are not the ones install.sh records; ${NOT_SERVED_EXIT} when they`,
    );
    expect(blocks).toContain(
      "by `bringup device check fixture-blocks` (records\n# fixture-blocks/device-blocks).",
    );
  });
});
