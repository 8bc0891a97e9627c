/** A decode under V8's sampling profiler, as the benches' --profile takes it. */
import { Session } from "node:inspector/promises";
import { writeFileAtomic } from "../src/common/atomic-write.js";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
  readonly children?: number[];
}

/**
 * One `decode` (of the arm `name`) under the sampling profiler (100 µs): the profile written to
 * `path`, then each function's share of the samples printed (a WebAssembly kernel shows as
 * wasm-function[i] of its module's hash), leaving out the inspector's own stopping of the profiler.
 */
export async function profileDecode(
  name: string,
  decode: () => Promise<{ readonly tokens: readonly number[]; readonly cpuRate: number }>,
  path: string,
): Promise<void> {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 100 });
  await session.post("Profiler.start");
  const run = await decode();
  const { profile } = await session.post("Profiler.stop");
  session.disconnect();
  await writeFileAtomic(path, JSON.stringify(profile));
  const nodes = profile.nodes as ProfileNode[];
  const frames = new Map(nodes.map((n) => [n.id, n.callFrame]));
  const parents = new Map(nodes.flatMap((n) => (n.children ?? []).map((c) => [c, n.id] as const)));
  /** Whether a sample lies under the inspector's own calls (stopping the profiler), not the decode's. */
  const profiler = (id: number | undefined): boolean =>
    id !== undefined && (frames.get(id)?.url.startsWith("node:inspector") || profiler(parents.get(id)));
  const self = new Map<string, number>();
  let total = 0;
  (profile.samples ?? []).forEach((id, i) => {
    if (profiler(id)) return;
    const frame = frames.get(id);
    const dt = profile.timeDeltas?.[i] ?? 0;
    const fn = `${frame?.functionName || "(anonymous)"} ${frame?.url.split("/").at(-1) ?? ""}`;
    self.set(fn, (self.get(fn) ?? 0) + dt);
    total += dt;
  });
  process.stdout.write(
    `\n${name} profiled over ${run.tokens.length} tokens (${run.cpuRate.toFixed(2)} tok per CPU-s), written to ${path}; self time by function:\n`,
  );
  for (const [fn, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 12))
    process.stdout.write(`${((100 * t) / total).toFixed(1).padStart(5)}%  ${fn}\n`);
}
