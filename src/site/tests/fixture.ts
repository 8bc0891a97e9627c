import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Catalog, LoadedPort, PortManifestInput } from "../../catalog/index.js";
import { PortManifest } from "../../catalog/index.js";
import { BenchRecord, type BenchRecordInput } from "../../records/index.js";

export function manifest(id: string, overrides: Partial<PortManifestInput> = {}): PortManifest {
  return PortManifest.parse({
    id,
    model: {
      name: `Model ${id}`,
      family: "Test",
      architecture: "moe",
      total_params_b: 30,
      weight_formats: ["bf16"],
    },
    scope: "full",
    hard: { summary: `what made ${id} hard`, features: ["attention.sliding-window"] },
    target: { accelerator: "gaudi2", cards: 8, nodes: 1 },
    software: { gaudi_software: "1.24.1", execution_mode: "lazy", hpu_graphs: true },
    status: { state: "production" },
    ...overrides,
  });
}

export function record(id: string, overrides: Partial<BenchRecordInput> = {}): BenchRecord {
  const [port = ""] = id.split("/");
  return BenchRecord.parse({
    schema: "bringup.record/1",
    id,
    port,
    metric: "decode_throughput",
    label: "decode speed",
    unit: "tok/s",
    method: "single-run",
    context: "at one stream",
    source: { kind: "reported", where: "the seed page", stated_method: "single run" },
    arms: [{ name: "port", figure: { shape: "point", value: 43.9 } }],
    recorded_at: "2026-01-01T00:00:00Z",
    ...overrides,
  });
}

export function port(root: string, m: PortManifest, readme: string, records: BenchRecord[] = []): LoadedPort {
  return { id: m.id, dir: join(root, "ports", m.id), manifest: m, readme, records };
}

/** Writes each port's manifest, page and records where the catalog says they are. */
export async function writePorts(catalog: Catalog): Promise<void> {
  for (const p of catalog.ports) {
    await mkdir(join(p.dir, "results"), { recursive: true });
    await writeFile(join(p.dir, "port.yaml"), JSON.stringify(p.manifest));
    await writeFile(join(p.dir, "README.md"), p.readme);
    await writeFile(
      join(p.dir, "results", "reported.jsonl"),
      p.records.map((r) => JSON.stringify(r)).join("\n"),
    );
  }
}
