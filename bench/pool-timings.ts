/**
 * Wall time the calling thread spends in each kind of pool call, for benches that split a decode
 * step: the matmuls keyed by their shape (with their flop rate), gate/up with SwiGLU, attention.
 * It wraps the methods of a MatmulPool class (the built engine's, whose instances the engine
 * makes), so every pool of the process is timed while it is on; a call made inside another timed
 * call (matmul's matmulMany) counts once, in the outer.
 */

/** One kind of pool call: how many, their wall milliseconds, their flops (0 where not counted). */
export interface PoolCallTimes {
  calls: number;
  ms: number;
  flops: number;
}

interface WeightShape {
  readonly rows: number;
  readonly cols: number;
}

/** How each wrapped method names a call and counts its flops, from its arguments. */
const KINDS: Record<string, (args: unknown[]) => { key: string; flops: number }> = {
  matmulMany: ([, M, weights]) => {
    const ws = weights as readonly WeightShape[];
    const rows = ws.reduce((sum, w) => sum + w.rows, 0);
    const K = (ws[0] as WeightShape).cols;
    return { key: `matmul [${rows}, ${K}]`, flops: 2 * (M as number) * rows * K };
  },
  matmulSwiglu: ([, M, gate]) => {
    const { rows, cols } = gate as WeightShape;
    return { key: `gate/up [2x${rows}, ${cols}] + SwiGLU`, flops: 4 * (M as number) * rows * cols };
  },
  attention: () => ({ key: "attention", flops: 0 }),
  swiglu: () => ({ key: "SwiGLU", flops: 0 }),
};

/**
 * Wraps `poolClass`'s methods; `times` then holds what was timed since `on` became true (reset it
 * by clearing the map).
 */
export function timePoolCalls(poolClass: { prototype: object }): {
  times: Map<string, PoolCallTimes>;
  on: boolean;
} {
  const state = { times: new Map<string, PoolCallTimes>(), on: false };
  const proto = poolClass.prototype as Record<string, (...args: unknown[]) => unknown>;
  let depth = 0;
  for (const [method, kind] of Object.entries(KINDS)) {
    const original = proto[method];
    if (original === undefined) continue;
    proto[method] = function (this: unknown, ...args: unknown[]) {
      if (!state.on || depth > 0) return original.apply(this, args);
      depth++;
      const t0 = performance.now();
      try {
        return original.apply(this, args);
      } finally {
        const ms = performance.now() - t0;
        depth--;
        const { key, flops } = kind(args);
        const entry = state.times.get(key) ?? { calls: 0, ms: 0, flops: 0 };
        entry.calls++;
        entry.ms += ms;
        entry.flops += flops;
        state.times.set(key, entry);
      }
    };
  }
  return state;
}
