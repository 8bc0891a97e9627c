import type { Build } from "../catalog/index.js";
import { BringupError } from "../common/errors.js";
import type { ModelSwitch } from "../engine/index.js";

/** A build the reference section serves, with where port.yaml declares it (for the message). */
export interface DeclaredBuild {
  /** e.g. `reference.benchmarks[0].b`. */
  readonly where: string;
  readonly build: Build;
}

/**
 * Refuses, before anything is served, a build whose switch the model does not declare or whose
 * value it does not allow (UP_SWITCH_INVALID, naming the switch and where port.yaml sets it), so a
 * typo in an arm does not fail the run after its gates.
 */
export function checkBuildSwitches(
  portId: string,
  builds: readonly DeclaredBuild[],
  declared: readonly ModelSwitch[],
): void {
  for (const { where, build } of builds) {
    for (const [name, value] of Object.entries(build.switches ?? {})) {
      const known = declared.find((s) => s.name === name);
      const at = `ports/${portId}/port.yaml ${where}`;
      if (known === undefined) {
        const names = declared.map((s) => s.name);
        throw new BringupError(
          "UP_SWITCH_INVALID",
          `${at} sets switch ${name}, which the ${portId} model does not have (${names.length > 0 ? `its switches: ${names.join(", ")}` : "it has no switches"}); remove it or fix its name.`,
          { subject: name },
        );
      }
      if (!known.values.includes(value)) {
        throw new BringupError(
          "UP_SWITCH_INVALID",
          `${at} sets ${name}=${value}, and switch ${name} is one of ${known.values.join(", ")}; pick one of those.`,
          { subject: name },
        );
      }
    }
  }
}
