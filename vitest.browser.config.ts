import { defineConfig } from "vitest/config";

/** The site in a real browser (Debian's chromium via playwright-core); `.ci/run` runs it after `npm test`. */
export default defineConfig({
  test: {
    include: ["test/browser/**/*.browser.ts"],
    testTimeout: 300_000,
    hookTimeout: 300_000,
  },
});
