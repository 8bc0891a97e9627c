/** matmul/fp8-rows.wat's ".lanes" text (see fp8-lanes.mjs). */
export function lanesText(file: string, text: string): string;
