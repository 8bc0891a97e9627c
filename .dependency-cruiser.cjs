/**
 * The import rules `npm test` holds src/ to (dependency-cruiser): no cycle, counting type-only
 * imports too (tsPreCompilationDeps: a cycle through types still ties two modules' designs together,
 * so neither can be read or moved alone).
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
    tsPreCompilationDeps: true,
    doNotFollow: { path: "node_modules" },
    exclude: { path: "\\.test\\.ts$" },
  },
};
