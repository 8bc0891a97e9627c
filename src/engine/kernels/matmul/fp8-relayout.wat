;; FP8 codes re-laid in place from the file order the checkpoints store into the lanes order the
;; engine's FP8 rows read fastest (formats/fp8-lanes.ts; its toLanesInPlace is the plain reference,
;; ./fp8-relayout.ts calls this where the codes lie in the shared memory):
;;
;;   to_lanes(at, count): count groups of 16 code bytes at byte at; byte 4i + r of each becomes
;;   its code 4·[0, 2, 1, 3][r] + i, one byte shuffle a group.
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "to_lanes") (param $at i32) (param $count i32)
    (local $end i32) (local $codes v128)
    (if (i32.eqz (local.get $count)) (then (return)))
    (local.set $end (i32.add (local.get $at) (i32.shl (local.get $count) (i32.const 4))))
    (loop $groups
      (local.set $codes (v128.load (local.get $at)))
      (v128.store (local.get $at)
        (i8x16.shuffle 0 8 4 12 1 9 5 13 2 10 6 14 3 11 7 15 (local.get $codes) (local.get $codes)))
      (br_if $groups (i32.lt_u
        (local.tee $at (i32.add (local.get $at) (i32.const 16)))
        (local.get $end))))))
