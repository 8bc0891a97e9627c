import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { awaitDispatch, signalDispatch } from "./dispatch-signal.js";
import { CONTROL } from "./kernel-thread.js";

/** A helper thread that awaits `dispatches` dispatches and counts each in slot 7 of `ctrl`. */
function helper(ctrl: Int32Array, dispatches: number): Worker {
  const esbuild = createRequire(import.meta.url)("esbuild") as {
    buildSync(options: object): { outputFiles: { text: string }[] };
  };
  const code = esbuild.buildSync({
    stdin: {
      contents: `import { workerData } from "node:worker_threads";
import { awaitDispatch } from "./dispatch-signal.ts";
const { ctrl, dispatches } = workerData;
let seen = 0;
for (let i = 0; i < dispatches; i++) {
  seen = awaitDispatch(ctrl, seen);
  Atomics.add(ctrl, 7, 1);
  Atomics.notify(ctrl, 7);
}`,
      resolveDir: import.meta.dirname,
      loader: "ts",
    },
    bundle: true,
    format: "cjs",
    platform: "node",
    write: false,
    logLevel: "error",
  }).outputFiles[0]?.text as string;
  return new Worker(code, { eval: true, workerData: { ctrl, dispatches } });
}

/** Blocks until slot 7 of `ctrl` reaches `count` (a minute at most). */
function awaitCount(ctrl: Int32Array, count: number): void {
  const until = Date.now() + 60_000;
  for (let c = Atomics.load(ctrl, 7); c < count && Date.now() < until; c = Atomics.load(ctrl, 7))
    Atomics.wait(ctrl, 7, c, 100);
}

describe("awaitDispatch and signalDispatch", () => {
  it("returns at once where the sequence slot has moved already", () => {
    const ctrl = new Int32Array(new SharedArrayBuffer(32));
    Atomics.store(ctrl, CONTROL.SEQ, 5);
    expect(awaitDispatch(ctrl, 4)).toBe(5);
    expect(Atomics.load(ctrl, CONTROL.SLEEPERS)).toBe(0);
  });

  it("reaches a helper that is watching, napping or asleep", async () => {
    const ctrl = new Int32Array(new SharedArrayBuffer(32));
    const worker = helper(ctrl, 4);
    const exited = new Promise((resolve) => worker.once("exit", resolve));
    for (let i = 1; i <= 4; i++) {
      // Back to back, then a pause in its naps, then two long enough for it to sleep until notified.
      const pause = [0, 2, 100, 300][i - 1] as number;
      await new Promise((resolve) => setTimeout(resolve, pause));
      if (pause >= 100) expect(Atomics.load(ctrl, CONTROL.SLEEPERS)).toBe(1);
      signalDispatch(ctrl);
      awaitCount(ctrl, i);
      expect(Atomics.load(ctrl, 7)).toBe(i);
    }
    await exited;
    expect(Atomics.load(ctrl, CONTROL.SLEEPERS)).toBe(0);
  });
});
