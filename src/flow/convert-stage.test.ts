import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDocument } from "yaml";
import { conversionKey, describeConversion } from "../catalog/index.js";
import { readRecords } from "../records/index.js";
import { bringUp } from "./bring-up.js";
import type { StageEvent } from "./summary.js";

const REPO = join(import.meta.dirname, "../..");
const PORT = "minimax-m3";
const FP8 = { to: "fp8", fp8_block: "block32" } as const;

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-convert-"));
  await mkdir(join(root, "ports"));
  await cp(join(REPO, "ports", "README.md"), join(root, "ports", "README.md"));
  await cp(join(REPO, "ports", PORT), join(root, "ports", PORT), { recursive: true });
  // Only the gates over the converted checkpoint, so the run stays short.
  const file = join(root, "ports", PORT, "port.yaml");
  const doc = parseDocument(await readFile(file, "utf8"));
  doc.setIn(
    ["reference", "gates"],
    doc.createNode([
      { kind: "weights-bit-identity", conversion: "MXFP4 experts to FP8", convert: FP8, record: `${PORT}/w` },
      {
        kind: "bit-identical-decode",
        compare: "two-builds",
        sampling: ["greedy"],
        baseline: { kv_layout: "window-sized", weights: FP8 },
        record: `${PORT}/d`,
      },
    ]),
  );
  // One short A/B whose arm b serves the conversion, the one server restarted as each arm.
  doc.setIn(
    ["reference", "benchmarks"],
    doc.createNode([
      {
        kind: "ab",
        metric: "decode_tok_s",
        a: { name: "MXFP4 experts" },
        b: { weights: FP8, name: "FP8 experts" },
        prompt_tokens: 8,
        output_tokens: 4,
        blocks: 2,
        record: `${PORT}/ab`,
      },
    ]),
  );
  await writeFile(file, doc.toString());
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("bringUp's conversion of the tiny checkpoint", () => {
  it("names conversions by target and blocks", () => {
    expect(conversionKey(FP8)).toBe("fp8-block32");
    expect(describeConversion(FP8)).toBe("converted to FP8 E4M3 with a scale per 32 values");
  });

  it("converts once, gates the conversion and its decode against the MXFP4 build, serves it as an A/B arm, and removes it", async () => {
    const events: StageEvent[] = [];
    const cacheDir = join(root, "cache");
    const summary = await bringUp({
      root,
      port: PORT,
      cacheDir,
      site: false,
      sweep: false,
      onStage: (event) => events.push(event),
    });
    expect(summary.gates.map((g) => [g.kind, g.status, g.value])).toEqual([
      ["weights-bit-identity", "passed", 0],
      ["bit-identical-decode", "passed", 0],
    ]);
    const convert = events.find((e) => e.stage === "convert" && e.status === "done");
    expect(convert?.detail).toMatch(/^converted to FP8 E4M3 with a scale per 32 values \(.*converted-/);
    // The converted checkpoint lived for the run only.
    expect((await readdir(join(cacheDir, PORT))).sort()).toEqual(["tiny"]);

    const records = new Map(
      (await readRecords(join(root, ".bringup", "results", PORT))).map((r) => [r.id, r]),
    );
    // Arms are named by what they are, never by the run's temporary directory or port.
    expect(records.get(`${PORT}/w`)?.arms.map((a) => a.name)).toEqual([
      "tiny reference checkpoint converted to FP8 E4M3 with a scale per 32 values",
    ]);
    expect(records.get(`${PORT}/d`)?.arms.map((a) => a.name)).toEqual(["window-sized KV layout"]);
    // Each A/B arm's fingerprint names the weights it served: the source's, then the conversion's.
    const ab = records.get(`${PORT}/ab`);
    expect(ab?.arms.map((a) => a.name)).toEqual(["MXFP4 experts", "FP8 experts"]);
    const [source, fp8] = (ab?.arms ?? []).map((a) => a.fingerprint?.weights_checksum);
    expect(source).toMatch(/^sha256:/);
    expect(fp8).toMatch(/^sha256:/);
    expect(fp8).not.toBe(source);
  });
});
