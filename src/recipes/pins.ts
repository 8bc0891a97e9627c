import { BringupError } from "../common/errors.js";
import { serveEnv } from "./serve.js";
import { assertPlainValue } from "./shell.js";
import { normalizePackageName, type PinnedPackage, type Recipe, type RecipeManifest } from "./source.js";

/** A pin a recipe needs and the manifest does not state, with where a person reads its value. */
export interface MissingPin {
  /** Dotted manifest field. */
  field: string;
  /** How to find the value on a machine that has the validated image. */
  source: string;
}

const IMAGE = "IMAGE";

/** Where each pin comes from; run the commands on the image the port was validated on. */
export const PIN_SOURCES: Record<string, string> = {
  "software.base_image": `the validated image by digest: docker pull ${IMAGE} && docker inspect --format '{{index .RepoDigests 0}}' ${IMAGE}, written as <repository>:<tag>@sha256:<digest>`,
  "software.pins.gaudi_build": `the Gaudi software build: docker run --rm ${IMAGE} dpkg-query -W -f '\${Version}' habanalabs-graph prints <version>-<build>`,
  "software.pins.python": `the image's Python: docker run --rm ${IMAGE} python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])'`,
  "software.pins.vllm": `docker run --rm ${IMAGE} pip show vllm (its Version line)`,
  "software.pins.vllm_gaudi": `docker run --rm ${IMAGE} pip show vllm-gaudi (its Version line)`,
  "software.pins.torch": `docker run --rm ${IMAGE} pip show torch (its Version line)`,
  "software.pins.packages": `pip show <name> in the image for every other Python package the port depends on; {} when there are none`,
  "model.context_length": "the longest context the port was served and gated at (vLLM's --max-model-len)",
};

/** Every pin the manifest lacks for a recipe, in the order of PIN_SOURCES. */
export function missingPins(manifest: RecipeManifest): MissingPin[] {
  const { software } = manifest;
  const pins = software.pins ?? {};
  const present: Record<string, unknown> = {
    "software.base_image": software.base_image,
    "software.pins.gaudi_build": pins.gaudi_build,
    "software.pins.python": pins.python,
    "software.pins.vllm": pins.vllm,
    "software.pins.vllm_gaudi": pins.vllm_gaudi,
    "software.pins.torch": pins.torch,
    "software.pins.packages": pins.packages,
    "model.context_length": manifest.model.context_length,
  };
  return Object.entries(PIN_SOURCES)
    .filter(([field]) => present[field] === undefined)
    .map(([field, source]) => ({ field, source }));
}

/** One line per missing pin, for messages and the linter. */
export function describeMissingPins(missing: readonly MissingPin[]): string {
  return missing.map((pin) => `  ${pin.field}: ${pin.source}`).join("\n");
}

/**
 * Turns a manifest into the facts its recipe states, or throws RECIPE_PINS_MISSING naming every
 * missing pin and where its value comes from. No value is guessed: a port gets a recipe only once
 * someone has validated it on the hardware and written down what it ran on.
 */
export function resolveRecipe(manifest: RecipeManifest): Recipe {
  const port = assertPlainValue("id", manifest.id);
  const missing = missingPins(manifest);
  if (missing.length > 0) {
    throw new BringupError(
      "RECIPE_PINS_MISSING",
      `port ${port} has no recipe until port.yaml states what it was validated on; ${missing.length} pin${missing.length === 1 ? " is" : "s are"} missing:\n${describeMissingPins(missing)}`,
      { subject: port },
    );
  }
  if (manifest.target.nodes !== 1) {
    throw new BringupError(
      "RECIPE_MULTI_NODE",
      `port ${port} runs on ${manifest.target.nodes} nodes; recipes serve on one node, so describe the multi-node setup in the port's page instead.`,
      { subject: port },
    );
  }
  const { software } = manifest;
  const pins = software.pins ?? {};
  // missingPins established that each of these is present.
  const need = (field: string, value: string | undefined): string => assertPlainValue(field, value ?? "");
  const gaudiVersion = need("software.gaudi_software", software.gaudi_software);
  const gaudiBuild = need("software.pins.gaudi_build", pins.gaudi_build);
  const pinned = (name: string, version: string, role: string): PinnedPackage => ({
    name: assertPlainValue(`software.pins.packages key ${name}`, name),
    normalized: normalizePackageName(name),
    version,
    role,
  });
  const packages: PinnedPackage[] = [
    pinned("habana-torch-plugin", `${gaudiVersion}.${gaudiBuild}`, "Gaudi software"),
    pinned("torch", need("software.pins.torch", pins.torch), "PyTorch"),
    pinned("vllm", need("software.pins.vllm", pins.vllm), "vLLM"),
    pinned("vllm-gaudi", need("software.pins.vllm_gaudi", pins.vllm_gaudi), "vllm-gaudi"),
  ];
  const others = Object.entries(pins.packages ?? {}).sort(([a], [b]) =>
    normalizePackageName(a) < normalizePackageName(b) ? -1 : 1,
  );
  for (const [name, version] of others) {
    const field = `software.pins.packages.${name}`;
    const entry = pinned(name, assertPlainValue(field, version), "port dependency");
    if (packages.some((known) => known.normalized === entry.normalized)) {
      throw new BringupError(
        "RECIPE_PIN_DUPLICATE",
        `port ${port}: ${field} pins a package that is already pinned; keep one pin per package.`,
        { subject: field },
      );
    }
    packages.push(entry);
  }
  const env = serveEnv(
    port,
    software.execution_mode,
    software.hpu_graphs,
    manifest.target.cards,
    software.serve_env ?? {},
  );
  for (const [name, value] of env) assertPlainValue(`software.serve_env.${name}`, value);
  return {
    port,
    image: need("software.base_image", software.base_image),
    gaudiVersion,
    gaudiBuild,
    python: need("software.pins.python", pins.python),
    packages,
    cards: manifest.target.cards,
    maxModelLen: manifest.model.context_length ?? 0,
    executionMode: software.execution_mode,
    hpuGraphs: software.hpu_graphs,
    env,
  };
}
