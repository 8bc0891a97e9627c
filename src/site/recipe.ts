import type { LoadedPort } from "../catalog/index.js";
import { type PinOrigin, type RecipeDevice, recipeSummary } from "../recipes/index.js";
import { portFindings } from "./findings-page.js";
import { code, table, text } from "./markdown.js";
import { portPage } from "./paths.js";

/** Where a pin comes from, as a table cell: the public source it was read off, or the device run's record. */
function origin(from: PinOrigin): string {
  return from.kind === "public-source"
    ? `public source, not read on a device: [${text(from.title)}](${from.url})`
    : `read on a device: ${code(from.record)}`;
}

/** How the image meets the port's device code: the serve and gate commands, or why nothing is served. */
function device(device: RecipeDevice): string[] {
  if (device.kind === "served") {
    return [
      `- **Serve:** ${code(device.serve)}`,
      `- **Gates** (inside the built image; the tiny checkpoint against the reference engine, then the released weights): ${code(device.gates)}`,
    ];
  }
  return [
    `- **Not served:** ${text(`vLLM does not serve this port's device code here: ${device.why}`)}`,
    `- **Gates:** ${text(`none run in the image: its tests/hpu/run_gates.sh checks the pins install.sh recorded and exits ${device.exit} without serving anything. The port's blocks are checked one by one against the reference engine on the CPU by`)} ${code(device.check)} ${text("(records")} ${code(device.record)}${text(").")}`,
  ];
}

/** The recipe section of a port's page: how the port is built, served and gated on vllm-gaudi. */
export function renderRecipe(port: LoadedPort): string {
  const summary = recipeSummary(port.manifest);
  if (summary.state === "none") {
    return ["### Recipe", "", text(`No recipe yet: ${summary.why}.`)].join("\n");
  }
  const env =
    summary.env.length === 0
      ? "None."
      : table(
          ["Variable", "Value"],
          summary.env.map(([name, value]) => [code(name), code(value)]),
        );
  const pins = table(
    ["Pin", "Value", "Where it comes from"],
    summary.pins.map(({ name, pin, release }) => [
      code(name),
      `${code(pin.value)}${release ? text(" (release; any build suffix)") : ""}`,
      origin(pin.origin),
    ]),
  );
  const ran =
    summary.deviceRuns.length === 0
      ? `**Not yet run on a device.** ${text("No one has built this image or served the port with it; the pins below come from public sources and install.sh checks them, which proves nothing about a device.")}`
      : `Run on a device: ${summary.deviceRuns.map(code).join(", ")}.`;
  return [
    "### Recipe",
    "",
    ran,
    "",
    ...portFindings(port.id, portPage(port.id)).flatMap((line) => [line, ""]),
    text(
      `The recipe follows vllm-gaudi ${summary.row.vllmGaudi} on Gaudi software ${summary.row.gaudiSoftware} with PyTorch ${summary.row.pytorch}, the newest validated row of vllm-gaudi's compatibility matrix. recipe/Dockerfile builds vLLM and vllm-gaudi on the stock image at those tags; recipe/install.sh checks the image against every pin below, stops the build on any mismatch, and installs the device plugin ${summary.plugin} and nothing else.`,
    ),
    "",
    `- **Build** (from the repository root): ${summary.build.map(code).join(", then ")}`,
    ...device(summary.device),
    "",
    "#### Server environment",
    "",
    env,
    "",
    "#### Pins",
    "",
    pins,
  ].join("\n");
}
