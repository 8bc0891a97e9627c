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
