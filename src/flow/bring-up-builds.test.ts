import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { createTinyModel, findTinySize, type TinySize } from "../engine/index.js";
import { readRecords } from "../records/index.js";
import { bringUp } from "./bring-up.js";
import type { BringUpOptions } from "./bring-up-options.js";
import { EmbeddedServer } from "./embedded-server.js";

const REPO = join(import.meta.dirname, "../..");
/** A port whose tiny model holds MXFP4 experts, so it has the mxfp4 switch. */
const PORT = "minimax-m3";

let root: string;
let quick: BringUpOptions;

/** The port's manifest with one cheap gate and the given A/B arms in its reference section. */
async function writeManifest(a: unknown, b: unknown): Promise<void> {
  const path = join(root, "ports", PORT, "port.yaml");
  const manifest = parse(await readFile(join(REPO, "ports", PORT, "port.yaml"), "utf8"));
  manifest.reference.gates = [
    {
      kind: "bit-identical-decode",
      compare: "batch-invariance",
      sampling: ["greedy"],
      record: `${PORT}/t-decode`,
    },
  ];
  manifest.reference.benchmarks = [
    {
      kind: "ab",
      metric: "decode_tok_s",
      a,
      b,
      prompt_tokens: 32,
      output_tokens: 4,
      blocks: 2,
      record: `${PORT}/t-expert-paths`,
    },
  ];
  await writeFile(path, stringify(manifest));
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-builds-"));
  await mkdir(join(root, "ports"));
  await cp(join(REPO, "ports", "README.md"), join(root, "ports", "README.md"));
  await cp(join(REPO, "ports", PORT), join(root, "ports", PORT), { recursive: true });
  quick = { root, port: PORT, cacheDir: join(root, "cache"), site: false, sweep: false, threads: 1 };
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("bringUp's A/Bs of two builds", () => {
  it("restarts the server as each arm's switches and names them in the record and its fingerprints", async () => {
    await writeManifest(
      { switches: { mxfp4: "unpacked" }, name: "unpacked MXFP4 experts" },
      { switches: { mxfp4: "fused" } },
    );
    const summary = await bringUp(quick);
    expect(summary.skippedBenchmarks).toEqual([]);
    const record = (await readRecords(join(root, ".bringup", "results", PORT))).find(
      (r) => r.id === `${PORT}/t-expert-paths`,
    );
    expect(record?.method).toBe("same-pod-ab");
    expect(record?.arms.map((arm) => [arm.name, arm.samples.length])).toEqual([
      ["unpacked MXFP4 experts", 4],
      ["mxfp4=fused", 4],
    ]);
    expect(record?.arms.map((arm) => arm.fingerprint?.server_flags?.slice(-2))).toEqual([
      ["--kv-layout=window-sized", "--switch=mxfp4=unpacked"],
      ["--kv-layout=window-sized", "--switch=mxfp4=fused"],
    ]);
  });

  it("leaves an A/B of switches out against an outside endpoint, which decides its own", async () => {
    await writeManifest({ switches: { mxfp4: "unpacked" } }, { switches: { mxfp4: "fused" } });
    const endpoint = await EmbeddedServer.start(
      {
        model: await createTinyModel(findTinySize("tiny") as TinySize),
        servedModelName: "outside",
        maxModelLen: 256,
        blockSize: 16,
        maxNumSeqs: 4,
        threads: 1,
      },
      "window-sized",
    );
    try {
      const summary = await bringUp({ ...quick, endpoint: endpoint.url });
      expect(summary.skippedBenchmarks).toEqual([
        expect.objectContaining({
          code: "UP_AB_SWITCHES_EXTERNAL",
          reason: expect.stringContaining("arm a sets switches (mxfp4=unpacked)"),
        }),
      ]);
    } finally {
      await endpoint.close();
    }
  });

  it("refuses an arm's switch the model does not have before serving anything", async () => {
    await writeManifest({ switches: { mxfp4: "packed" } }, { switches: { mxfp4: "fused" } });
    await expect(bringUp(quick)).rejects.toMatchObject({
      code: "UP_SWITCH_INVALID",
      message: expect.stringContaining("reference.benchmarks[0].a sets mxfp4=packed"),
    });
    await writeManifest({ switches: { mla_form: "expanded" } }, { switches: { mxfp4: "fused" } });
    await expect(bringUp(quick)).rejects.toMatchObject({
      code: "UP_SWITCH_INVALID",
      message: expect.stringContaining("sets switch mla_form, which the minimax-m3 model does not have"),
    });
  });
});
