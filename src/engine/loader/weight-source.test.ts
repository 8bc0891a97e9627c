import { describe, expect, it } from "vitest";
import { isBringupError } from "../../common/errors.js";
import { weightAt } from "../kernels/reference.js";
import { wasmArena } from "../kernels/wasm-arena.js";
import { shareArray, type Weight } from "../tensor/weight.js";
import type { HostTensor } from "./host-tensor.js";
import { WeightSource } from "./weight-source.js";

const E = 3;
const ROWS = 4;
const COLS = 64;

/** FP8 experts as `weights convert --to fp8` writes them from MXFP4: codes and a scale per 32. */
function fp8Experts(scaleShape: number[], scaleAt: (i: number) => number): Map<string, HostTensor> {
  const codes = Uint8Array.from({ length: E * ROWS * COLS }, (_, i) => (i * 7) % 0x7f);
  const count = scaleShape.reduce((a, b) => a * b, 1);
  return new Map<string, HostTensor>([
    ["experts.down_proj", { dtype: "F8_E4M3", shape: [E, ROWS, COLS], data: codes }],
    [
      "experts.down_proj_scale_inv",
      { dtype: "F32", shape: scaleShape, data: Float32Array.from({ length: count }, (_, i) => scaleAt(i)) },
    ],
  ]);
}

function source(tensors: Map<string, HostTensor>): WeightSource {
  return new WeightSource((n) => tensors.get(n), [...tensors.keys()], "ckpt");
}

function errorOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (isBringupError(error)) return `${error.code} ${error.subject}: ${error.message}`;
    throw error;
  }
  throw new Error("no error");
}

describe("FP8 expert weights with block scales", () => {
  it("reads stacked experts as views, each value its code times its block's scale", () => {
    const tensors = fp8Experts([E, ROWS, COLS / 32], (i) => 2 ** (i % 5) / 8);
    const experts = source(tensors).stackedMatrices("experts.down_proj", E, ROWS, COLS);
    const codes = tensors.get("experts.down_proj")?.data as Uint8Array;
    expect(experts.map((w) => [w.dtype, w.scale?.blockRows, w.scale?.blockCols])).toEqual(
      Array(E).fill(["fp8_e4m3", 1, 32]),
    );
    const e = 2;
    const [row, col] = [3, 40];
    const fp8 = experts[e];
    if (fp8 === undefined) throw new Error("no expert");
    const scale = 2 ** ((e * ROWS * 2 + row * 2 + 1) % 5) / 8;
    const single = { dtype: "fp8_e4m3" as const, rows: 1, cols: 1, data: Uint8Array.of(0) };
    single.data[0] = codes[(e * ROWS + row) * COLS + col] as number;
    expect(weightAt(fp8, row, col)).toBe(Math.fround(weightAt(single, 0, 0) * scale));
    // Each expert's codes and scales are slices the fused kernel reads in place.
    const arena = wasmArena();
    if (arena === null) throw new Error("this runtime has no shared WebAssembly memory");
    for (const part of [fp8.data, fp8.scale?.data ?? new Float32Array(1)])
      expect(arena.offsetOf(part)).toBe(part.byteOffset);
  });

  it("reads stacked experts converted out of MXFP4 under `<base>.weight`, FP8 or BF16, as the same matrices", () => {
    // formats' stackedName: gpt-oss's own name would be read transposed by a bf16 loader.
    const renamed = new Map(
      [...fp8Experts([E, ROWS, COLS / 32], (i) => 2 ** (i % 5) / 8)].map(([n, t]) => [
        n.replace("down_proj", "down_proj.weight"),
        t,
      ]),
    );
    const fp8 = source(fp8Experts([E, ROWS, COLS / 32], (i) => 2 ** (i % 5) / 8)).stackedMatrices(
      "experts.down_proj",
      E,
      ROWS,
      COLS,
    );
    const read = source(renamed).stackedMatrices("experts.down_proj", E, ROWS, COLS);
    const values = (ws: readonly Weight[]) =>
      ws.flatMap((w) =>
        Array.from({ length: ROWS * COLS }, (_, i) => weightAt(w, Math.floor(i / COLS), i % COLS)),
      );
    expect(values(read)).toEqual(values(fp8));
    // BF16 experts, bits for the values above (each an FP8 value, exact in bf16).
    const bits = Uint16Array.from(
      values(fp8),
      (v) => new Uint16Array(Float32Array.of(v).buffer)[1] as number,
    );
    const bf16 = source(
      new Map<string, HostTensor>([
        ["experts.down_proj.weight", { dtype: "BF16", shape: [E, ROWS, COLS], data: bits }],
      ]),
    ).stackedMatrices("experts.down_proj", E, ROWS, COLS);
    expect(bf16.map((w) => w.dtype)).toEqual(Array(E).fill("bf16"));
    expect(values(bf16)).toEqual(values(fp8));
  });

  it("reads an unstacked matrix with a scale per 32 values or per tile", () => {
    for (const [grid, blocks] of [
      [
        [ROWS, COLS / 32],
        [1, 32],
      ],
      [
        [1, 1],
        [ROWS, COLS],
      ],
    ] as const) {
      const tensors = new Map<string, HostTensor>([
        ["proj.weight", { dtype: "F8_E4M3", shape: [ROWS, COLS], data: new Uint8Array(ROWS * COLS) }],
        [
          "proj.weight_scale_inv",
          { dtype: "F32", shape: [...grid], data: new Float32Array(grid[0] * grid[1]).fill(0.5) },
        ],
      ]);
      const w = source(tensors).matrix("proj", ROWS, COLS);
      expect([w.scale?.blockRows, w.scale?.blockCols]).toEqual(blocks);
    }
  });

  it("widens an FP8 linear read in f32 with its E8M0 block scales, each value its code times its scale", () => {
    // DeepSeek-V4 ships its linears' block scales as E8M0 (2^(code - 127)); its wo_a is read in f32.
    const codes = Uint8Array.from({ length: ROWS * COLS }, (_, i) => (i * 5) % 0x7f);
    const tensors = new Map<string, HostTensor>([
      ["proj.weight", { dtype: "F8_E4M3", shape: [ROWS, COLS], data: codes }],
      ["proj.weight_scale_inv", { dtype: "F8_E8M0", shape: [1, 2], data: Uint8Array.from([125, 130]) }],
    ]);
    const w = source(tensors);
    const values = w.tensor("proj.weight", [ROWS, COLS]);
    const plain = source(new Map([["proj.weight", tensors.get("proj.weight") as HostTensor]]));
    const unscaled = plain.tensor("proj.weight", [ROWS, COLS]);
    for (let i = 0; i < ROWS * COLS; i++)
      expect(values[i]).toBe((unscaled[i] as number) * (i % COLS < 32 ? 2 ** -2 : 2 ** 3));
    expect(w.unused()).toEqual([]);
  });

  it("refuses packed bytes (I8, U8) where a float tensor is read, naming the tensor", () => {
    const t = new Map<string, HostTensor>([
      ["e.w1.weight", { dtype: "I8", shape: [2], data: new Uint8Array(2) }],
    ]);
    expect(errorOf(() => source(t).vector("e.w1.weight", 2))).toMatch(
      /^MODEL_WEIGHT_DTYPE e\.w1\.weight: .* is I8, packed bytes/,
    );
  });

  it("refuses scales whose grid does not tile the experts, naming the tensor", () => {
    for (const shape of [
      [E, ROWS, 3],
      [E - 1, ROWS, COLS / 32],
      [E, ROWS * 2, COLS / 32],
      [ROWS, COLS / 32],
    ]) {
      expect(
        errorOf(() => source(fp8Experts(shape, () => 1)).stackedMatrices("experts.down_proj", E, ROWS, COLS)),
      ).toMatch(/^MODEL_WEIGHTS_MISMATCH experts\.down_proj_scale_inv: ckpt: .*no grid of scale blocks/);
    }
  });

  it("refuses a NaN or infinite scale, naming the tensor", () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
      const tensors = fp8Experts([E, ROWS, COLS / 32], (i) => (i === 17 ? bad : 1));
      expect(errorOf(() => source(tensors).stackedMatrices("experts.down_proj", E, ROWS, COLS))).toMatch(
        new RegExp(`^MODEL_WEIGHTS_INVALID experts\\.down_proj_scale_inv: .*holds ${bad} at index 17`),
      );
    }
  });

  it("refuses FP8 experts without their scales", () => {
    const tensors = fp8Experts([E, ROWS, COLS / 32], () => 1);
    tensors.delete("experts.down_proj_scale_inv");
    expect(errorOf(() => source(tensors).stackedMatrices("experts.down_proj", E, ROWS, COLS))).toMatch(
      /^MODEL_WEIGHT_MISSING experts\.down_proj_scale_inv/,
    );
  });
});

describe("MXFP4 weights", () => {
  /** MXFP4 blocks and E8M0 scales for `lead` x [ROWS, COLS], scale 127 (one) except `bad` at index 5. */
  function mxfp4(name: string, lead: number[], bad?: number): Map<string, HostTensor> {
    const groups = [...lead, ROWS, COLS / 32];
    const count = groups.reduce((a, b) => a * b, 1);
    const scales = new Uint8Array(count).fill(127);
    if (bad !== undefined) scales[5] = bad;
    return new Map<string, HostTensor>([
      [
        `${name}_blocks`,
        { dtype: "U8", shape: [...groups, 16], data: new Uint8Array(count * 16).fill(0x21) },
      ],
      [`${name}_scales`, { dtype: "U8", shape: groups, data: scales }],
    ]);
  }

  it("refuses a scale of 255 (NaN) at load, stacked or not, naming the tensor", () => {
    expect(
      errorOf(() =>
        source(mxfp4("experts.down_proj", [E], 255)).stackedMatrices("experts.down_proj", E, ROWS, COLS),
      ),
    ).toMatch(/^MODEL_WEIGHTS_INVALID experts\.down_proj_scales: .*holds 255 \(NaN in E8M0\) at index 5/);
    expect(errorOf(() => source(mxfp4("mlp.up.weight", [], 255)).matrix("mlp.up", ROWS, COLS))).toMatch(
      /^MODEL_WEIGHTS_INVALID mlp\.up\.weight_scales: .*holds 255/,
    );
  });

  it("reads the largest finite scale, 254", () => {
    const [w] = source(mxfp4("experts.down_proj", [E], 254)).stackedMatrices(
      "experts.down_proj",
      E,
      ROWS,
      COLS,
    );
    expect(w?.dtype).toBe("mxfp4");
    expect(source(mxfp4("mlp.up.weight", [], 254)).matrix("mlp.up", ROWS, COLS).dtype).toBe("mxfp4");
  });

  it("refuses blocks whose shape does not match the scales or the expert count, naming the tensor", () => {
    expect(
      errorOf(() =>
        source(mxfp4("experts.down_proj", [E])).stackedMatrices("experts.down_proj", E + 1, ROWS, COLS),
      ),
    ).toMatch(/^MODEL_WEIGHTS_MISMATCH experts\.down_proj_blocks: .*config\.json implies \[4, 4, 2, 16\]/);
    const tensors = mxfp4("experts.down_proj", [E]);
    const scales = tensors.get("experts.down_proj_scales") as HostTensor;
    tensors.set("experts.down_proj_scales", {
      ...scales,
      shape: [E, ROWS, 1],
      data: new Uint8Array(E * ROWS),
    });
    expect(errorOf(() => source(tensors).stackedMatrices("experts.down_proj", E, ROWS, COLS))).toMatch(
      /^MODEL_WEIGHTS_MISMATCH experts\.down_proj_scales/,
    );
  });
});

describe("f32 matrices", () => {
  const values = (n: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i + 1));

  it("are laid out in row quads in the kernels' memory, read back row-major as tensors", () => {
    const [rows, cols] = [6, 8];
    const stored = values(rows * cols);
    const tensors = new Map<string, HostTensor>([
      ["proj.weight", { dtype: "F32", shape: [rows, cols], data: stored.slice() }],
    ]);
    const s = source(tensors);
    const w = s.matrix("proj", rows, cols);
    expect(w.layout).toBe("row-quads");
    expect(wasmArena()?.offsetOf(w.data)).toBe(w.data.byteOffset);
    const read = (m: Weight) =>
      Array.from({ length: rows * cols }, (_, i) => weightAt(m, Math.floor(i / cols), i % cols));
    expect(read(w)).toEqual(Array.from(stored));
    // Read again, as a matrix or as a plain tensor (now that its copy in the memory is laid out).
    expect(read(s.matrix("proj", rows, cols))).toEqual(Array.from(stored));
    expect(Array.from(s.tensor("proj.weight", [rows, cols]))).toEqual(Array.from(stored));
  });

  it("stacked, are laid out expert by expert, each expert's view a row-quads matrix", () => {
    const stored = values(E * ROWS * COLS);
    const tensors = new Map<string, HostTensor>([
      ["experts.down_proj", { dtype: "F32", shape: [E, ROWS, COLS], data: stored.slice() }],
    ]);
    const s = source(tensors);
    const experts = s.stackedMatrices("experts.down_proj", E, ROWS, COLS);
    experts.forEach((w, e) => {
      expect(w.layout).toBe("row-quads");
      const want = Array.from(stored.subarray(e * ROWS * COLS, (e + 1) * ROWS * COLS));
      expect(
        Array.from({ length: ROWS * COLS }, (_, i) => weightAt(w, Math.floor(i / COLS), i % COLS)),
      ).toEqual(want);
    });
    expect(Array.from(s.tensor("experts.down_proj", [E, ROWS, COLS]))).toEqual(Array.from(stored));
  });

  it("over one array read in two shapes, agree where the layouts do and are refused by name where not", () => {
    const stored = values(2 * 4 * 8);
    const both = (rows: number) => {
      const data = shareArray(stored.subarray(0, 2 * rows * 8));
      return source(
        new Map<string, HostTensor>([
          ["experts.w", { dtype: "F32", shape: [2, rows, 8], data }],
          ["w.weight", { dtype: "F32", shape: [2 * rows, 8], data }],
        ]),
      );
    };
    // Experts of 4 rows: groups of four rows never straddle two experts, so the layouts are one.
    const even = both(4);
    const [, second] = even.stackedMatrices("experts.w", 2, 4, 8);
    const whole = even.matrix("w", 8, 8);
    expect([weightAt(second as Weight, 3, 5), weightAt(whole, 7, 5)]).toEqual([stored[61], stored[61]]);
    const odd = both(3);
    odd.stackedMatrices("experts.w", 2, 3, 8);
    expect(errorOf(() => odd.matrix("w", 6, 8))).toMatch(
      /^WEIGHT_LAYOUT_CONFLICT w\.weight: .*matrices of \[3, 8\] and is now read as matrices of \[6, 8\]/,
    );
    // The same values as [8, 8] and as [16, 4]: rows of four at both, but groups of other widths.
    const data = shareArray(stored.slice(0, 64));
    const reshaped = source(
      new Map<string, HostTensor>([
        ["a.weight", { dtype: "F32", shape: [8, 8], data }],
        ["b.weight", { dtype: "F32", shape: [16, 4], data }],
      ]),
    );
    reshaped.matrix("a", 8, 8);
    expect(errorOf(() => reshaped.matrix("b", 16, 4))).toMatch(
      /^WEIGHT_LAYOUT_CONFLICT b\.weight: .*matrices of \[8, 8\] and is now read as matrices of \[16, 4\]/,
    );
  });
});
