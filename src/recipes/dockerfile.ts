import { generatedNotice } from "./install-script.js";
import type { Recipe } from "./source.js";

/** Where the Dockerfile puts the port inside the image. */
export function portInImage(port: string): string {
  return `/opt/bringup/ports/${port}`;
}

/**
 * The Dockerfile builds from the repository root (`docker build -f ports/<id>/recipe/Dockerfile .`)
 * so it can copy the whole port; install.sh then fails the build if the base image does not match.
 */
export function renderDockerfile(recipe: Recipe): string {
  const dest = portInImage(recipe.port);
  return `${generatedNotice(recipe.port, "#")}
#
# Build from the repository root:
#   docker build -f ports/${recipe.port}/recipe/Dockerfile -t bringup/${recipe.port} .
# The base image is pinned by digest; install.sh fails the build if its contents differ from the pins.
FROM ${recipe.image}
COPY ports/${recipe.port} ${dest}
RUN ["/bin/sh", "${dest}/recipe/install.sh"]
`;
}
