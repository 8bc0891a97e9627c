// matmul/fp8-rows.wat's ".quads" text, from its ".lanes" text (fp8-lanes.mjs), for codes in
// formats/fp8-quads.ts's order (each group of four rows one run, block by block, a row's 32 codes
// at 32·r in its block's 128 bytes; the chunk a call gets starts at a multiple of four rows and
// holds whole groups). fp8 reads rows 1-3 at constant offsets from row 0's pointer, steps 128
// bytes a block, and drops its reads ahead: one sequential stream is the prefetcher's to follow
// (16 of 64 random experts [2048, 1024]: with them the quads order ran 0.92x [0.90, 0.93] the
// lanes rows' speed, without 1.10x [1.04, 1.17]). decode takes a group of four rows a pass
// (`$group`), each block's four rows in turn, so it reads the group's codes once, in their order,
// where it read them in four strided passes, row by row (decode alone on [2880, 2880] 1.12x
// [1.04, 1.20], then the tile 1.10x [1.04, 1.17]; on 16 of 64 random experts 1.21x [1.18, 1.24];
// the decode into scratch runs from KernelSwitches.mxfp4ScratchTokens input rows). Refused when
// the text has none of them. Used by build-kernels.mjs and bench/kernel-before-after.ts.
import { rewriteWat } from "./wat-rewrites.mjs";

/** A load from row 1-3's pointer, or (fp8-lanes.mjs's lower load) from one byte below it. */
const OTHER_ROW_LOAD =
  /\(v128\.load offset=(\d+) (?:\(local\.get \$c([123])\)|\(i32\.sub \(local\.get \$c([123])\) \(i32\.const 1\)\))\)/g;
const OTHER_ROW_STEP = /\n\s*\(local\.set \$c([123]) \(i32\.add \(local\.get \$c\1\) \(i32\.const 32\)\)\)/g;
const ROW0_STEP = "(local.set $c0 (i32.add (local.get $c0) (i32.const 32)))";
const READ_AHEAD =
  /\n\s*\(drop \(i32\.load8_u [^\n]*\$ahead[^\n]*|\n\s*\(local\.set \$ahead \(i32\.add \(local\.get \$ahead\) \(local\.get \$aheadStep\)\)\)/g;
const DECODE_GROUP = "(local.set $group (i32.const 1))";

/** `lanes` (the ".lanes" text) reading codes in quads order; `file` names it in the error when it has nothing to rewrite. */
export function quadsText(file, lanes) {
  return rewriteWat(file, ".quads", lanes, [
    [
      OTHER_ROW_LOAD,
      (_, offset, row, lowerRow) => {
        const at = Number(offset) + 32 * Number(row ?? lowerRow);
        const base = row === undefined ? "(i32.sub (local.get $c0) (i32.const 1))" : "(local.get $c0)";
        return `(v128.load offset=${at} ${base})`;
      },
    ],
    [OTHER_ROW_STEP, ""],
    [ROW0_STEP, "(local.set $c0 (i32.add (local.get $c0) (i32.const 128)))"],
    [READ_AHEAD, ""],
    [DECODE_GROUP, "(local.set $group (i32.const 4))"],
  ]);
}
