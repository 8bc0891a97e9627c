/**
 * The import rules `npm test` holds src/ to (dependency-cruiser): no cycle, counting the imports
 * that exist at run time (type-only imports are erased by the compiler and order no module's
 * loading), and no test helper imported by library code.
 */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "an import cycle: modules of src/ import each other, so neither can load first",
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: false,
    doNotFollow: { path: "node_modules" },
    exclude: { path: "\\.test\\.ts$" },
  },
};
