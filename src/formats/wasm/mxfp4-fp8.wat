;; MXFP4 to FP8 E4M3 by table lookup (../mxfp4-fp8-simd.ts loads it; ../mxfp4-to-fp8.ts is the plain
;; path it must equal bit for bit).
;;
;; One MXFP4 block is 16 bytes, one v128 of 32 E2M1 codes, low nibble first. Its nibbles index a
;; 16-byte table of E4M3 codes (one table per shift d, the block's value being e2m1 · 2^d) with
;; i8x16.relaxed_swizzle: every index is a nibble, under 16, where relaxed and plain swizzle agree
;; (the build also writes a .plain-swizzle binary with i8x16.swizzle for runtimes without relaxed
;; SIMD). Two shuffles interleave the low- and high-nibble codes into the 32 output bytes.
;; Every address is a byte offset into the imported shared memory. The per-block steps are written
;; out in full rather than called: Node 20's V8 does not inline wasm calls, and a call per block
;; made these loops 1.7-3.8x slower.
(module
  (import "env" "memory" (memory 1 65536 shared))

  ;; tops(blocks, scales, rows, groups, tiles): for a band of rows × groups blocks (a row's blocks
  ;; at blocks + 16·groups·r, its scale codes at scales + groups·r), stores at tiles + 16t one v128
  ;; per 128-column tile t (four blocks) whose byte lanes the caller reduces to the tile's largest
  ;; value. A lane covers two elements of a block (a byte's two nibbles): 0 when both are zero,
  ;; else the block's scale code plus 2 + the top binade of the larger magnitude (magnitude codes
  ;; 6, 7 → 4; 4, 5 → 3; 2, 3 → 2; 1 → 1), saturating at 255. A ragged last tile has 1-3 blocks.
  ;; Tiles go one at a time down the band, so each keeps its running maximum in a register.
  (func (export "tops")
    (param $blocks i32) (param $scales i32) (param $rows i32) (param $groups i32) (param $tiles i32)
    (local $t i32) (local $r i32) (local $wholeTiles i32) (local $bp i32) (local $sp i32)
    (local $rowBytes i32) (local $ragged i32) (local $j i32) (local $bj i32) (local $sj i32)
    (local $sevens v128) (local $binades v128) (local $zero v128) (local $top v128) (local $v v128)
    (local $lanes v128)
    (local.set $sevens (v128.const i8x16 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7))
    ;; 2 + the top binade of each magnitude code 0-7 (0 for a zero).
    (local.set $binades (v128.const i8x16 0 1 2 2 3 3 4 4 0 0 0 0 0 0 0 0))
    (local.set $zero (v128.const i64x2 0 0))
    (local.set $rowBytes (i32.shl (local.get $groups) (i32.const 4)))
    (local.set $wholeTiles (i32.shr_u (local.get $groups) (i32.const 2)))
    (local.set $ragged (i32.and (local.get $groups) (i32.const 3)))
    (block $wholeDone
      (loop $whole
        (br_if $wholeDone (i32.ge_u (local.get $t) (local.get $wholeTiles)))
        (local.set $bp (i32.add (local.get $blocks) (i32.shl (local.get $t) (i32.const 6))))
        (local.set $sp (i32.add (local.get $scales) (i32.shl (local.get $t) (i32.const 2))))
        (local.set $top (local.get $zero))
        (local.set $r (i32.const 0))
        (block $rowsDone
          (loop $row
            (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
            ;; Block 0 of the tile's row: the binade of each byte's larger magnitude (sign masked
            ;; off), plus the scale code except where both elements are zero.
            (local.set $v (v128.load offset=0 (local.get $bp)))
            (local.set $lanes (i8x16.relaxed_swizzle (local.get $binades) (i8x16.max_u
              (v128.and (local.get $v) (local.get $sevens))
              (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $sevens)))))
            (local.set $top (i8x16.max_u (local.get $top) (v128.andnot
              (i8x16.add_sat_u (local.get $lanes) (i8x16.splat (i32.load8_u offset=0 (local.get $sp))))
              (i8x16.eq (local.get $lanes) (local.get $zero)))))
            ;; Blocks 1, 2 and 3 alike.
            (local.set $v (v128.load offset=16 (local.get $bp)))
            (local.set $lanes (i8x16.relaxed_swizzle (local.get $binades) (i8x16.max_u
              (v128.and (local.get $v) (local.get $sevens))
              (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $sevens)))))
            (local.set $top (i8x16.max_u (local.get $top) (v128.andnot
              (i8x16.add_sat_u (local.get $lanes) (i8x16.splat (i32.load8_u offset=1 (local.get $sp))))
              (i8x16.eq (local.get $lanes) (local.get $zero)))))
            (local.set $v (v128.load offset=32 (local.get $bp)))
            (local.set $lanes (i8x16.relaxed_swizzle (local.get $binades) (i8x16.max_u
              (v128.and (local.get $v) (local.get $sevens))
              (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $sevens)))))
            (local.set $top (i8x16.max_u (local.get $top) (v128.andnot
              (i8x16.add_sat_u (local.get $lanes) (i8x16.splat (i32.load8_u offset=2 (local.get $sp))))
              (i8x16.eq (local.get $lanes) (local.get $zero)))))
            (local.set $v (v128.load offset=48 (local.get $bp)))
            (local.set $lanes (i8x16.relaxed_swizzle (local.get $binades) (i8x16.max_u
              (v128.and (local.get $v) (local.get $sevens))
              (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $sevens)))))
            (local.set $top (i8x16.max_u (local.get $top) (v128.andnot
              (i8x16.add_sat_u (local.get $lanes) (i8x16.splat (i32.load8_u offset=3 (local.get $sp))))
              (i8x16.eq (local.get $lanes) (local.get $zero)))))
            (local.set $bp (i32.add (local.get $bp) (local.get $rowBytes)))
            (local.set $sp (i32.add (local.get $sp) (local.get $groups)))
            (local.set $r (i32.add (local.get $r) (i32.const 1)))
            (br $row)))
        (v128.store (i32.add (local.get $tiles) (i32.shl (local.get $t) (i32.const 4))) (local.get $top))
        (local.set $t (i32.add (local.get $t) (i32.const 1)))
        (br $whole)))
    (if (i32.eqz (local.get $ragged)) (then (return)))
    ;; The ragged tile (t = wholeTiles), block by block.
    (local.set $bp (i32.add (local.get $blocks) (i32.shl (local.get $t) (i32.const 6))))
    (local.set $sp (i32.add (local.get $scales) (i32.shl (local.get $t) (i32.const 2))))
    (local.set $top (local.get $zero))
    (local.set $r (i32.const 0))
    (block $raggedRowsDone
      (loop $raggedRow
        (br_if $raggedRowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $bj (local.get $bp))
        (local.set $sj (local.get $sp))
        (local.set $j (i32.const 0))
        (block $blocksDone
          (loop $block
            (br_if $blocksDone (i32.ge_u (local.get $j) (local.get $ragged)))
            (local.set $v (v128.load (local.get $bj)))
            (local.set $lanes (i8x16.relaxed_swizzle (local.get $binades) (i8x16.max_u
              (v128.and (local.get $v) (local.get $sevens))
              (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $sevens)))))
            (local.set $top (i8x16.max_u (local.get $top) (v128.andnot
              (i8x16.add_sat_u (local.get $lanes) (i8x16.splat (i32.load8_u (local.get $sj))))
              (i8x16.eq (local.get $lanes) (local.get $zero)))))
            (local.set $bj (i32.add (local.get $bj) (i32.const 16)))
            (local.set $sj (i32.add (local.get $sj) (i32.const 1)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $block)))
        (local.set $bp (i32.add (local.get $bp) (local.get $rowBytes)))
        (local.set $sp (i32.add (local.get $sp) (local.get $groups)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $raggedRow)))
    (v128.store (i32.add (local.get $tiles) (i32.shl (local.get $t) (i32.const 4))) (local.get $top)))

  ;; shifted(blocks, scales, out, rows, groups, bias, tables) -> count: rows × groups blocks, row
  ;; by row, to 32 E4M3 codes each at out (in order). A block's shift is its scale code minus
  ;; bias[g >> 2] (an i32 per 128-column tile: the tile's m + 127), and its codes come from the table
  ;; for that shift (tables points at shift 0's; shift d's is at tables + 16d). Returns how many
  ;; blocks have a shift below ALL_EXACT_SHIFT (-8). A row goes a whole tile (four blocks, one
  ;; bias) at a time, then block by block through a ragged last tile.
  (func (export "shifted")
    (param $blocks i32) (param $scales i32) (param $out i32) (param $rows i32) (param $groups i32)
    (param $bias i32) (param $tables i32) (result i32)
    (local $r i32) (local $q i32) (local $wholeTiles i32) (local $low i32) (local $tileTables i32)
    (local $floor i32) (local $bp i32) (local $scale i32) (local $g i32) (local $ragged i32)
    (local $nibbles v128) (local $table v128) (local $v v128) (local $lo v128)
    (local.set $nibbles (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))
    (local.set $wholeTiles (i32.shr_u (local.get $groups) (i32.const 2)))
    (local.set $ragged (i32.and (local.get $groups) (i32.const 3)))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $bp (local.get $bias))
        (local.set $q (i32.const 0))
        (block $wholeDone
          (loop $whole
            (br_if $wholeDone (i32.ge_u (local.get $q) (local.get $wholeTiles)))
            ;; The tile's tables start at tables - 16·bias (a block's is 16·scale on); a scale code
            ;; below floor = bias - 8 is a low shift.
            (local.set $tileTables
              (i32.sub (local.get $tables) (i32.shl (i32.load (local.get $bp)) (i32.const 4))))
            (local.set $floor (i32.add (i32.load (local.get $bp)) (i32.const -8)))
            ;; Block 0: count a low shift, look its nibbles up in its table, and store the low- and
            ;; high-nibble codes interleaved, low nibble first.
            (local.set $scale (i32.load8_u offset=0 (local.get $scales)))
            (local.set $low (i32.add (local.get $low) (i32.lt_s (local.get $scale) (local.get $floor))))
            (local.set $table
              (v128.load (i32.add (local.get $tileTables) (i32.shl (local.get $scale) (i32.const 4)))))
            (local.set $v (v128.load offset=0 (local.get $blocks)))
            (local.set $lo (i8x16.relaxed_swizzle (local.get $table) (v128.and (local.get $v) (local.get $nibbles))))
            (local.set $v (i8x16.relaxed_swizzle (local.get $table)
              (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $nibbles))))
            (v128.store offset=0 (local.get $out)
              (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $v)))
            (v128.store offset=16 (local.get $out)
              (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $v)))
            ;; Blocks 1, 2 and 3 alike.
            (local.set $scale (i32.load8_u offset=1 (local.get $scales)))
            (local.set $low (i32.add (local.get $low) (i32.lt_s (local.get $scale) (local.get $floor))))
            (local.set $table
              (v128.load (i32.add (local.get $tileTables) (i32.shl (local.get $scale) (i32.const 4)))))
            (local.set $v (v128.load offset=16 (local.get $blocks)))
            (local.set $lo (i8x16.relaxed_swizzle (local.get $table) (v128.and (local.get $v) (local.get $nibbles))))
            (local.set $v (i8x16.relaxed_swizzle (local.get $table)
              (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $nibbles))))
            (v128.store offset=32 (local.get $out)
              (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $v)))
            (v128.store offset=48 (local.get $out)
              (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $v)))
            (local.set $scale (i32.load8_u offset=2 (local.get $scales)))
            (local.set $low (i32.add (local.get $low) (i32.lt_s (local.get $scale) (local.get $floor))))
            (local.set $table
              (v128.load (i32.add (local.get $tileTables) (i32.shl (local.get $scale) (i32.const 4)))))
            (local.set $v (v128.load offset=32 (local.get $blocks)))
            (local.set $lo (i8x16.relaxed_swizzle (local.get $table) (v128.and (local.get $v) (local.get $nibbles))))
            (local.set $v (i8x16.relaxed_swizzle (local.get $table)
              (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $nibbles))))
            (v128.store offset=64 (local.get $out)
              (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $v)))
            (v128.store offset=80 (local.get $out)
              (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $v)))
            (local.set $scale (i32.load8_u offset=3 (local.get $scales)))
            (local.set $low (i32.add (local.get $low) (i32.lt_s (local.get $scale) (local.get $floor))))
            (local.set $table
              (v128.load (i32.add (local.get $tileTables) (i32.shl (local.get $scale) (i32.const 4)))))
            (local.set $v (v128.load offset=48 (local.get $blocks)))
            (local.set $lo (i8x16.relaxed_swizzle (local.get $table) (v128.and (local.get $v) (local.get $nibbles))))
            (local.set $v (i8x16.relaxed_swizzle (local.get $table)
              (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $nibbles))))
            (v128.store offset=96 (local.get $out)
              (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $v)))
            (v128.store offset=112 (local.get $out)
              (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $v)))
            (local.set $blocks (i32.add (local.get $blocks) (i32.const 64)))
            (local.set $scales (i32.add (local.get $scales) (i32.const 4)))
            (local.set $out (i32.add (local.get $out) (i32.const 128)))
            (local.set $bp (i32.add (local.get $bp) (i32.const 4)))
            (local.set $q (i32.add (local.get $q) (i32.const 1)))
            (br $whole)))
        ;; The ragged tile, block by block.
        (if (local.get $ragged)
          (then
            (local.set $tileTables
              (i32.sub (local.get $tables) (i32.shl (i32.load (local.get $bp)) (i32.const 4))))
            (local.set $floor (i32.add (i32.load (local.get $bp)) (i32.const -8)))
            (local.set $g (i32.const 0))
            (block $raggedDone
              (loop $raggedBlock
                (br_if $raggedDone (i32.ge_u (local.get $g) (local.get $ragged)))
                (local.set $scale (i32.load8_u (local.get $scales)))
                (local.set $low (i32.add (local.get $low) (i32.lt_s (local.get $scale) (local.get $floor))))
                (local.set $table
                  (v128.load (i32.add (local.get $tileTables) (i32.shl (local.get $scale) (i32.const 4)))))
                (local.set $v (v128.load (local.get $blocks)))
                (local.set $lo (i8x16.relaxed_swizzle (local.get $table)
                  (v128.and (local.get $v) (local.get $nibbles))))
                (local.set $v (i8x16.relaxed_swizzle (local.get $table)
                  (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $nibbles))))
                (v128.store offset=0 (local.get $out)
                  (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $v)))
                (v128.store offset=16 (local.get $out)
                  (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $v)))
                (local.set $blocks (i32.add (local.get $blocks) (i32.const 16)))
                (local.set $scales (i32.add (local.get $scales) (i32.const 1)))
                (local.set $out (i32.add (local.get $out) (i32.const 32)))
                (local.set $g (i32.add (local.get $g) (i32.const 1)))
                (br $raggedBlock)))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row)))
    (local.get $low))

  ;; plain(blocks, out, n, table): n blocks to 32 codes each at out, all looked up in the 16-byte
  ;; table at `tableAt` (the per-32 layout, shift 0).
  (func (export "plain") (param $blocks i32) (param $out i32) (param $n i32) (param $tableAt i32)
    (local $i i32) (local $nibbles v128) (local $table v128) (local $v v128) (local $lo v128)
    (local.set $nibbles (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))
    (local.set $table (v128.load (local.get $tableAt)))
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $v (v128.load (local.get $blocks)))
        (local.set $lo (i8x16.relaxed_swizzle (local.get $table) (v128.and (local.get $v) (local.get $nibbles))))
        (local.set $v (i8x16.relaxed_swizzle (local.get $table)
          (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $nibbles))))
        (v128.store offset=0 (local.get $out)
          (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $v)))
        (v128.store offset=16 (local.get $out)
          (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $v)))
        (local.set $blocks (i32.add (local.get $blocks) (i32.const 16)))
        (local.set $out (i32.add (local.get $out) (i32.const 32)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $block)))))
