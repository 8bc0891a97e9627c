import type { LoadedPort } from "../catalog/index.js";
import { recipeSummary } from "../recipes/index.js";
import { code, table, text } from "./markdown.js";

/** The recipe section of a port's page: how the port is built, served and gated on vllm-gaudi. */
export function renderRecipe(port: LoadedPort): string {
  const summary = recipeSummary(port.manifest);
  if (summary.state === "unpinned") {
    return [
      "### Recipe",
      "",
      `No recipe yet: one is generated once the manifest states the image and versions the port was validated on; ${code(`bringup recipe ${port.id}`)} lists the missing pins (${summary.missing.map((pin) => code(pin.field)).join(", ")}).`,
    ].join("\n");
  }
  const env =
    summary.env.length === 0
      ? "None."
      : table(
          ["Variable", "Value"],
          summary.env.map(([name, value]) => [code(name), code(value)]),
        );
  const packages = table(
    ["Package", "Version"],
    summary.packages.map(({ name, version }) => [code(name), code(version)]),
  );
  return [
    "### Recipe",
    "",
    `Built from ${code(summary.image)} (Gaudi software ${code(summary.gaudiSoftware)}, Python ${code(summary.python)}); ${text("recipe/install.sh checks the image against every pin below and stops the build on any mismatch.")}`,
    "",
    `- **Build** (from the repository root): ${code(summary.build)}`,
    `- **Serve:** ${code(summary.serve)}`,
    `- **Gates** (inside the built image): ${code(summary.gates)}`,
    "",
    "#### Server environment",
    "",
    env,
    "",
    "#### Pinned packages",
    "",
    packages,
  ].join("\n");
}
