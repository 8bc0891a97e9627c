import {
  BUILD_WHEEL,
  deviceRunNotice,
  generatedNotice,
  HOST_WHEEL_DIR,
  WHEEL_DIR,
} from "./install-script.js";
import { assertPlainValue } from "./shell.js";
import type { Recipe } from "./source.js";

/** Where the Dockerfile puts the port inside the image. */
export function portInImage(port: string): string {
  return `/opt/bringup/ports/${port}`;
}

/** `docker build` of a port's recipe, run from the repository root. */
export function dockerBuildCommand(port: string): string {
  return `docker build -f ports/${port}/recipe/Dockerfile -t bringup/${port} .`;
}

/**
 * The Dockerfile builds from the repository root so it can copy the port and the plugin wheel. On
 * the stock image it builds vLLM and vllm-gaudi from source at the pinned tags, as vllm-gaudi's own
 * Ubuntu Dockerfile does (vLLM for the empty target device on the image's PyTorch, then the plugin
 * for hpu); install.sh then fails the build unless the result matches every pin, and installs the
 * device plugin wheel and nothing else.
 */
export function renderDockerfile(recipe: Recipe): string {
  const dest = portInImage(recipe.port);
  const { vllm, vllmGaudi } = recipe.builds;
  const plain = (field: string, value: string) => assertPlainValue(field, value);
  const env = (pairs: [string, string][]) =>
    pairs.map(([name, value]) => `${plain("build env", name)}=${plain("build env", value)}`).join(" ");
  return `${generatedNotice(recipe.port, "#")}
#
${deviceRunNotice(recipe, "#")}
#
# Build from the repository root, with the device plugin's wheel built first:
#   ${BUILD_WHEEL}
#   ${dockerBuildCommand(recipe.port)}
# The stock image is named by tag (no one has pulled it here to read its digest); install.sh fails the
# build if what the tag gives differs from the pins.
FROM ${recipe.image.value}

# vLLM and vllm-gaudi from source at the pinned tags, as vllm-gaudi documents: vLLM for the empty
# target device reusing the image's PyTorch (torch is dropped from its build requirements), then
# vllm-gaudi. pip resolves their other dependencies as vllm-gaudi's own Dockerfile lets it.
RUN git clone --depth 1 --branch ${plain("vLLM ref", vllm.ref)} ${plain("vLLM repository", vllm.repository)} /opt/src/vllm \\
 && cd /opt/src/vllm \\
 && sed '/^torch/d' requirements/build/cuda.txt > /tmp/vllm-build-requirements.txt \\
 && pip install -r /tmp/vllm-build-requirements.txt \\
 && ${env(vllm.env)} pip install --no-build-isolation . \\
 && git clone --depth 1 --branch ${plain("vllm-gaudi ref", vllmGaudi.ref)} ${plain("vllm-gaudi repository", vllmGaudi.repository)} /opt/src/vllm-gaudi \\
 && cd /opt/src/vllm-gaudi \\
 && ${env(vllmGaudi.env)} pip install --no-build-isolation .

COPY ${HOST_WHEEL_DIR}/ ${WHEEL_DIR}/
COPY ports/${recipe.port} ${dest}
RUN ["/bin/sh", "${dest}/recipe/install.sh"]
`;
}
