/** matmul/fp8-rows.wat's ".scaled" text (see fp8-scaled.mjs). */
export function scaledText(file: string, text: string): string;
