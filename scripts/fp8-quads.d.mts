/** matmul/fp8-rows.wat's ".quads" text from its ".lanes" text (see fp8-quads.mjs). */
export function quadsText(file: string, lanes: string): string;
