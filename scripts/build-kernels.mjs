// Compiles every WebAssembly text kernel under src/ (src/**/*.wat) to a binary beside it and under
// dist/, with wabt (installed from npm, so a fresh clone needs nothing else). A kernel that uses
// relaxed SIMD also gets a binary without it, for runtimes that lack it (and, for the matmul, runs
// that ask for the unfused tile): ".unfused" where each f32x4.relaxed_madd of three locals becomes a
// mul then an add, ".plain-swizzle" where each i8x16.relaxed_swizzle becomes i8x16.swizzle, ".plain-dot"
// where each i16x8.relaxed_dot_i8x16_i7x16_s becomes the same sums from plain SIMD (exact, as
// the relaxed form is when its second operand's bytes lie in [0, 127] and the sums fit in i16); a
// kernel using several kinds gets one such binary with every rewrite, named by the first listed.
// The MXFP4 decode also gets ".halves" builds for codes in the engine's re-laid-out order
// (HALVES_REWRITES), the FP8 rows ".lanes", ".quads", ".nan-free" and ".scaled" builds (FP8_ROWS_KERNELS).
// The attention kernel's binary has a dot3 the build makes from its dot4 (attention-dot3.mjs), and
// the exp of swiglu.wat's clamped_swiglu as a function (fdlibm-exp.mjs).
// With --check it writes nothing and exits 1 if a binary under src/ differs from its source.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import wabtInit from "wabt";
import { withDot3 } from "./attention-dot3.mjs";
import { withExp } from "./fdlibm-exp.mjs";
import { lanesText } from "./fp8-lanes.mjs";
import { nanFreeText } from "./fp8-nan-free.mjs";
import { quadsText } from "./fp8-quads.mjs";
import { scaledText } from "./fp8-scaled.mjs";
import { rewriteWat } from "./wat-rewrites.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const FEATURES = { simd: true, threads: true, relaxed_simd: true };
const MADD = /\(f32x4\.relaxed_madd (\(local\.get \$\w+\)) (\(local\.get \$\w+\)) (\(local\.get \$\w+\))\)/g;

/** The unfused text of a kernel: a·b + c as (c + a·b), rounded twice. */
function unfusedText(text) {
  const out = text.replace(MADD, "(f32x4.add $3 (f32x4.mul $1 $2))");
  if (out.includes("(f32x4.relaxed_madd")) throw new Error("a relaxed_madd whose operands are not locals");
  return out;
}

const DOT = /\(i16x8\.relaxed_dot_i8x16_i7x16_s (\(local\.get \$\w+\)) (\(local\.get \$\w+\))\)/g;

/**
 * The relaxed dot's i16 lane j (the products of bytes 2j and 2j + 1 of a and b added) from plain
 * SIMD: the i32 pair sums of the low and high eight bytes (i32x4.dot_i16x8_s), narrowed to i16
 * (exact: a kernel's sums must fit, as the relaxed form's saturating ones must).
 */
function plainDotText(text) {
  const half = (side, a, b) =>
    `(i32x4.dot_i16x8_s (i16x8.extend_${side}_i8x16_s ${a}) (i16x8.extend_${side}_i8x16_s ${b}))`;
  const out = text.replace(
    DOT,
    (_, a, b) => `(i16x8.narrow_i32x4_s ${half("low", a, b)} ${half("high", a, b)})`,
  );
  if (out.includes("(i16x8.relaxed_dot")) throw new Error("a relaxed_dot whose operands are not locals");
  return out;
}

/**
 * The binaries without relaxed SIMD: for each relaxed instruction a kernel may use, a suffix and a
 * rewrite. A kernel using several gets one such binary, every rewrite applied, named by the first.
 */
const WITHOUT_RELAXED = [
  { instruction: "(f32x4.relaxed_madd", suffix: ".unfused.wasm", rewrite: unfusedText },
  { instruction: "(i16x8.relaxed_dot_i8x16_i7x16_s", suffix: ".plain-dot.wasm", rewrite: plainDotText },
  {
    instruction: "(i8x16.relaxed_swizzle",
    suffix: ".plain-swizzle.wasm",
    rewrite: (text) => text.replaceAll("(i8x16.relaxed_swizzle", "(i8x16.swizzle"),
  },
];

/**
 * MXFP4 kernels that also get a ".halves" build (and its build without relaxed SIMD) reading codes
 * in formats/mxfp4-halves.ts's order: byte i of a block's 16 holds value v(i) in its low nibble
 * and v(i) + 16 in its high one, v = 0 4 1 5 2 6 3 7 8 12 9 13 10 14 11 15. There the low nibbles
 * ($lo) are the codes of the block's first 16 values in that order and the high ones ($hi) of the
 * next 16, each f32 lane of words holding values j and j + 4; each kernel's rewrites drop what puts
 * OCP codes in its own order. matmul/mxfp4-decode.wat (that order, as it states): the swizzle into
 * $packed and the two interleaves of $lo and $hi. matmul/mxfp4-rows.wat (OCP codes in ascending
 * order, each word widened to a lane by an interleave with zeros): the two interleaves of $lo and
 * $hi, and the widenings become a byte shuffle moving each lane's low word up over zeros (values
 * j) and a mask (values j + 4). A shuffle, not a 32-bit shift: on Intel cores vector shifts share
 * ports 0 and 1 with the multiply-adds (same bits; the fused step through the pool on [256, 2048]
 * ran 9.4-10.1 against 8.9-9.0 G weights/s with the shift, runs alternated). Refused when a kernel
 * no longer has what its rewrites drop.
 */
const ORDER_FOR_WORD_PAIRS = [
  /\(local\.set \$(\w+) \(i8x16\.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 \(local\.get \$lo\) \(local\.get \$hi\)\)\)/g,
  "(local.set $$$1 (local.get $lo))",
];
const HALVES_REWRITES = {
  "src/engine/kernels/matmul/mxfp4-decode.wat": [
    [
      /\(local\.set \$packed \(i8x16\.(?:relaxed_)?swizzle \(v128\.load \(local\.get \$(\w+)\)\)\s+\(v128\.const i8x16 0 2 1 3 4 6 5 7 8 10 9 11 12 14 13 15\)\)\)/g,
      "(local.set $packed (v128.load (local.get $$$1)))",
    ],
    ORDER_FOR_WORD_PAIRS,
    [
      /\(local\.set \$(\w+) \(i8x16\.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 \(local\.get \$lo\) \(local\.get \$hi\)\)\)/g,
      "(local.set $$$1 (local.get $hi))",
    ],
  ],
  "src/engine/kernels/matmul/mxfp4-rows.wat": [
    [
      /\(local\.set \$(\w+) \(i8x16\.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 \(local\.get \$lo\) \(local\.get \$hi\)\)\)/g,
      "(local.set $$$1 (local.get $lo))",
    ],
    [
      /\(local\.set \$(\w+) \(i8x16\.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 \(local\.get \$lo\) \(local\.get \$hi\)\)\)/g,
      "(local.set $$$1 (local.get $hi))",
    ],
    [
      /\(i8x16\.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 \(local\.get \$zero\) \(local\.get \$(\w+)\)\)/g,
      "(i8x16.swizzle (local.get $$$1) (v128.const i8x16 128 128 0 1 128 128 4 5 128 128 8 9 128 128 12 13))",
    ],
    [
      /\(i8x16\.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 \(local\.get \$zero\) \(local\.get \$(\w+)\)\)/g,
      "(v128.and (local.get $$$1) (v128.const i32x4 0xffff0000 0xffff0000 0xffff0000 0xffff0000))",
    ],
  ],
};

/**
 * The FP8 rows get a ".lanes" build for codes in formats/fp8-lanes.ts's order (fp8-lanes.mjs), from
 * it a ".quads" build for formats/fp8-quads.ts's (fp8-quads.mjs), and each build a ".nan-free" one
 * (fp8-nan-free.mjs), and every one of these a ".scaled" one (fp8-scaled.mjs: the `fp8=scaled`
 * switch's); each also without relaxed SIMD.
 */
const FP8_ROWS_KERNELS = ["src/engine/kernels/matmul/fp8-rows.wat"];

/**
 * Kernels whose text gets functions made before any build: from its own (attention-dot3.mjs) or
 * from another kernel's (fdlibm-exp.mjs).
 */
const DERIVED_FUNCTIONS = {
  "src/engine/kernels/paged-attention/attention.wat": (file, text) =>
    withExp(root, file, withDot3(file, text)),
};

function watFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? watFiles(join(dir, e.name)) : e.name.endsWith(".wat") ? [join(dir, e.name)] : [],
  );
}

/** Writes atomically (temp file then rename), so a reader never sees half a binary. */
function writeAtomic(path, bytes) {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.tmp-${process.pid}`;
  writeFileSync(temp, bytes);
  renameSync(temp, path);
}

const check = process.argv.includes("--check");
const stale = [];
const wabt = await wabtInit();
for (const file of watFiles(join(root, "src"))) {
  const derive = DERIVED_FUNCTIONS[relative(root, file)];
  const text = derive === undefined ? readFileSync(file, "utf8") : derive(file, readFileSync(file, "utf8"));
  const variants = [[".wasm", text]];
  const relaxed = WITHOUT_RELAXED.filter((r) => text.includes(r.instruction));
  if (relaxed.length > 0) variants.push([relaxed[0].suffix, relaxed.reduce((t, r) => r.rewrite(t), text)]);
  const rewrites = HALVES_REWRITES[relative(root, file)];
  if (rewrites !== undefined)
    for (const [suffix, source] of [...variants])
      variants.push([`.halves${suffix}`, rewriteWat(file, ".halves", source, rewrites)]);
  if (FP8_ROWS_KERNELS.includes(relative(root, file))) {
    for (const [suffix, source] of [...variants]) variants.push([`.lanes${suffix}`, lanesText(file, source)]);
    for (const [suffix, source] of [...variants])
      if (suffix.startsWith(".lanes"))
        variants.push([suffix.replace(".lanes", ".quads"), quadsText(file, source)]);
    for (const [suffix, source] of [...variants])
      variants.push([`.nan-free${suffix}`, nanFreeText(file, source)]);
    for (const [suffix, source] of [...variants])
      variants.push([`.scaled${suffix}`, scaledText(file, source)]);
  }
  for (const [suffix, source] of variants) {
    const module = wabt.parseWat(file, source, FEATURES);
    module.validate(FEATURES);
    const { buffer } = module.toBinary({});
    module.destroy();
    const rel = relative(root, file).replace(/\.wat$/, suffix);
    if (check) {
      if (!existsSync(join(root, rel)) || !Buffer.from(buffer).equals(readFileSync(join(root, rel))))
        stale.push(rel);
    } else {
      writeAtomic(join(root, rel), buffer);
      writeAtomic(join(root, "dist", rel), buffer);
    }
  }
}
if (stale.length > 0) {
  console.error(`stale kernel binaries (run npm run build:kernels): ${stale.join(", ")}`);
  process.exit(1);
}
