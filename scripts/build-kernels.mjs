// Compiles every WebAssembly text kernel under src/ (src/**/*.wat) to a binary beside it and under
// dist/, with wabt (installed from npm, so a fresh clone needs nothing else). A kernel that uses
// relaxed SIMD also gets a binary without it, for runtimes that lack it (and, for the matmul, runs
// that ask for the unfused tile): ".unfused" where each f32x4.relaxed_madd of three locals becomes a
// mul then an add, ".plain-swizzle" where each i8x16.relaxed_swizzle becomes i8x16.swizzle, ".plain-dot"
// where each i32x4.relaxed_dot_i8x16_i7x16_add_s becomes the same sums from plain SIMD (exact, as
// the relaxed form is when its second operand's bytes lie in [0, 127]). The MXFP4 decode also gets
// ".halves" builds for codes in the engine's re-laid-out order (HALVES_KERNELS).
// With --check it writes nothing and exits 1 if a binary under src/ differs from its source.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import wabtInit from "wabt";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const FEATURES = { simd: true, threads: true, relaxed_simd: true };
const MADD = /\(f32x4\.relaxed_madd (\(local\.get \$\w+\)) (\(local\.get \$\w+\)) (\(local\.get \$\w+\))\)/g;

/** The unfused text of a kernel: a·b + c as (c + a·b), rounded twice. */
function unfusedText(text) {
  const out = text.replace(MADD, "(f32x4.add $3 (f32x4.mul $1 $2))");
  if (out.includes("(f32x4.relaxed_madd")) throw new Error("a relaxed_madd whose operands are not locals");
  return out;
}

const DOT =
  /\(i32x4\.relaxed_dot_i8x16_i7x16_add_s (\(local\.get \$\w+\)) (\(local\.get \$\w+\)) (\(local\.get \$\w+\))\)/g;

/**
 * The relaxed dot's lane l (c + the products of bytes 4l to 4l + 3 of a and b) from plain SIMD: the
 * i16 pair sums of the low and high eight bytes (i32x4.dot_i16x8_s), then lanes added in pairs.
 */
function plainDotText(text) {
  const half = (side, a, b) =>
    `(i32x4.dot_i16x8_s (i16x8.extend_${side}_i8x16_s ${a}) (i16x8.extend_${side}_i8x16_s ${b}))`;
  const out = text.replace(DOT, (_, a, b, c) => {
    const pair = `${half("low", a, b)} ${half("high", a, b)}`;
    return (
      `(i32x4.add ${c} (i32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 ${pair})` +
      ` (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 ${pair})))`
    );
  });
  if (out.includes("(i32x4.relaxed_dot")) throw new Error("a relaxed_dot whose operands are not locals");
  return out;
}

/** The binaries without relaxed SIMD: for each relaxed instruction a kernel uses, a suffix and a rewrite. */
const WITHOUT_RELAXED = [
  { instruction: "(f32x4.relaxed_madd", suffix: ".unfused.wasm", rewrite: unfusedText },
  {
    instruction: "(i8x16.relaxed_swizzle",
    suffix: ".plain-swizzle.wasm",
    rewrite: (text) => text.replaceAll("(i8x16.relaxed_swizzle", "(i8x16.swizzle"),
  },
  { instruction: "(i32x4.relaxed_dot_i8x16_i7x16_add_s", suffix: ".plain-dot.wasm", rewrite: plainDotText },
];

/**
 * MXFP4 kernels that also get a ".halves" build (and its builds without relaxed SIMD) reading codes
 * in formats/mxfp4-halves.ts's order, value j in byte j's low nibble and j + 16 in its high one:
 * the two shuffles that interleave low and high nibbles back into value order go, the low nibbles
 * being values 0-15 and the high ones 16-31 already. Refused when a kernel no longer has them.
 */
const HALVES_KERNELS = ["src/engine/kernels/matmul/mxfp4-decode.wat"];
const INTERLEAVE = [
  [
    "(local.set $first (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))",
    "(local.set $first (local.get $lo))",
  ],
  [
    "(local.set $second (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi)))",
    "(local.set $second (local.get $hi))",
  ],
];

function halvesText(file, text) {
  let out = text;
  for (const [from, to] of INTERLEAVE) {
    if (!out.includes(from))
      throw new Error(`${file}: its ".halves" build drops the code interleave ${from}, which is not there`);
    out = out.replaceAll(from, to);
  }
  return out;
}

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
  const text = readFileSync(file, "utf8");
  const variants = [[".wasm", text]];
  const relaxed = WITHOUT_RELAXED.filter((r) => text.includes(r.instruction));
  if (relaxed.length > 1)
    throw new Error(`${file}: one kind of relaxed instruction per kernel, or name its variants`);
  for (const { suffix, rewrite } of relaxed) variants.push([suffix, rewrite(text)]);
  if (HALVES_KERNELS.includes(relative(root, file)))
    for (const [suffix, source] of [...variants])
      variants.push([`.halves${suffix}`, halvesText(file, source)]);
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
