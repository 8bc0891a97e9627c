import { cp, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDocument } from "yaml";
import { createTinyModel, findTinySize } from "../engine/index.js";
import { type RunningServer, startServer } from "../server/index.js";
import { bringUp } from "./bring-up.js";

const REPO = join(import.meta.dirname, "../..");
const PORT = "mimo-v2.6-flash";

let root: string;
let server: RunningServer;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "bringup-up-endpoint-"));
  await mkdir(join(root, "ports"));
  await cp(join(REPO, "ports", "README.md"), join(root, "ports", "README.md"));
  await cp(join(REPO, "ports", PORT), join(root, "ports", PORT), { recursive: true });
  // Only the gates that compare against a baseline, so none can run without --reference.
  const manifest = join(root, "ports", PORT, "port.yaml");
  const doc = parseDocument(await readFile(manifest, "utf8"));
  const gates = doc.getIn(["reference", "gates"]) as { items: { get(key: string): unknown }[] };
  gates.items = gates.items.filter((gate) => gate.get("kind") !== "needles");
  await writeFile(manifest, doc.toString());
  const size = findTinySize("tiny");
  if (!size) throw new Error("tiny size missing");
  server = await startServer({ model: await createTinyModel(size), port: 0, threads: 1 });
});

afterAll(async () => {
  await server?.close();
  await rm(root, { recursive: true, force: true });
});

describe("bringUp against an endpoint where nothing can run", () => {
  it("marks the stages that did nothing skipped, never done, and builds no site", async () => {
    const siteDir = join(root, "site-out");
    const summary = await bringUp({ root, port: PORT, endpoint: server.url, siteDir });
    const status = Object.fromEntries(summary.stages.map((s) => [s.stage, s.status]));
    expect(summary.gates.map((g) => [g.status, g.code])).toEqual([
      ["not-run", "GATE_NEEDS_REFERENCE"],
      ["not-run", "GATE_NEEDS_REFERENCE"],
    ]);
    expect(status).toMatchObject({
      serve: "skipped",
      gates: "skipped",
      sweep: "skipped",
      benchmarks: "skipped",
      site: "skipped",
    });
    expect(summary.stages.find((s) => s.stage === "serve")?.detail).toContain(`${server.url} serves tiny`);
    expect(summary.page).toBeUndefined();
    await expect(stat(siteDir)).rejects.toThrow();
  });
});
