import { BringupError } from "../../common/errors.js";

/** Checks a sliding window length (positions a query sees, itself included). */
export function checkWindow(window: number): number {
  if (!Number.isInteger(window) || window < 1) {
    throw new BringupError(
      "SLIDING_WINDOW_INVALID",
      `a sliding-window layer needs a window of at least 1 position, got ${window}; fix the model config's sliding_window.`,
      { subject: "sliding_window" },
    );
  }
  return window;
}

/** Checks a compression ratio (positions pooled into one compressed row). */
export function checkRatio(ratio: number): number {
  if (!Number.isInteger(ratio) || ratio < 1) {
    throw new BringupError(
      "COMPRESS_RATIO_INVALID",
      `a compressed state needs a whole number of positions per row, at least 1, got ${ratio}; fix the model config's compress_rates.`,
      { subject: "compress_rates" },
    );
  }
  return ratio;
}
