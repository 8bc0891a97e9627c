;; MXFP4 codes re-laid out in place from the OCP order the checkpoints store into the halves order
;; the engine's MXFP4 kernels read fastest (formats/mxfp4-halves.ts; its toHalvesInto is the plain
;; reference, ./mxfp4-relayout.ts calls this where the codes lie in the shared memory):
;;
;;   to_halves(at, count): count blocks of 16 code bytes at byte at. In OCP order byte j holds
;;   values 2j and 2j + 1 of its block of 32; in halves order byte i holds value v(i) in its low
;;   nibble and v(i) + 16 in its high one, v = 0 4 1 5 2 6 3 7 8 12 9 13 10 14 11 15.
;;
;; Per block: the low nibbles (values 0 2 4 ... 30) and the high ones (1 3 5 ... 31) side by side
;; are 32 codes a shuffle picks from, value j at j / 2 when even and 16 + (j - 1) / 2 when odd; one
;; shuffle gathers the values v(i), another the values v(i) + 16, shifted up a nibble (as 16-bit
;; lanes: each byte is below 16, so none crosses into the next) and or-ed in.
(module
  (import "env" "memory" (memory 1 65536 shared))

  (func (export "to_halves") (param $at i32) (param $count i32)
    (local $end i32) (local $packed v128) (local $lo v128) (local $hi v128)
    (if (i32.eqz (local.get $count)) (then (return)))
    (local.set $end (i32.add (local.get $at) (i32.shl (local.get $count) (i32.const 4))))
    (loop $blocks
      (local.set $packed (v128.load (local.get $at)))
      (local.set $lo (v128.and (local.get $packed) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
      (local.set $hi (v128.and (i16x8.shr_u (local.get $packed) (i32.const 4))
        (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
      (v128.store (local.get $at) (v128.or
        (i8x16.shuffle 0 2 16 18 1 3 17 19 4 6 20 22 5 7 21 23 (local.get $lo) (local.get $hi))
        (i16x8.shl (i8x16.shuffle 8 10 24 26 9 11 25 27 12 14 28 30 13 15 29 31 (local.get $lo) (local.get $hi))
          (i32.const 4))))
      (br_if $blocks (i32.lt_u
        (local.tee $at (i32.add (local.get $at) (i32.const 16)))
        (local.get $end))))))
