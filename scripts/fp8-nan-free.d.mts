/** matmul/fp8-rows.wat's ".nan-free" text (see fp8-nan-free.mjs). */
export function nanFreeText(file: string, text: string): string;
/** What opens each NaN code test in matmul/fp8-rows.wat. */
export const NAN_TEST: string;
