// Compiles every WebAssembly text kernel under src/ (src/**/*.wat) to a binary beside it and under
// dist/, with wabt (installed from npm, so a fresh clone needs nothing else). A kernel that uses
// relaxed SIMD also gets a binary without it, for runtimes that lack it (and, for the matmul, runs
// that ask for the unfused tile): ".unfused" where each f32x4.relaxed_madd of three locals becomes a
// mul then an add, ".plain-swizzle" where each i8x16.relaxed_swizzle becomes i8x16.swizzle, ".plain-dot"
// where each i16x8.relaxed_dot_i8x16_i7x16_s becomes the same sums from plain SIMD (exact, as
// the relaxed form is when its second operand's bytes lie in [0, 127] and the sums fit in i16); a
// kernel using several kinds gets one such binary with every rewrite, named by the first listed.
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
  if (relaxed.length > 0) variants.push([relaxed[0].suffix, relaxed.reduce((t, r) => r.rewrite(t), text)]);
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
