/** paged-attention/attention.wat's text with dot3 built from its dot4 (see attention-dot3.mjs). */
export function withDot3(file: string, text: string): string;
