/**
 * THE pins of every recipe, and where each value comes from: the one file to change when the
 * vllm-gaudi platform moves. A port's manifest says how the port is served (cards, execution mode,
 * environment); everything about the image lives here.
 *
 * Every pin has an origin. `public-source` means the value was read off vllm-gaudi's or vLLM's
 * published source and documents, never off a device: no one has pulled the image or run a recipe
 * yet. `read-on-device` means someone read it on the built image during a device run that is
 * recorded. The generated files, the port pages and `bringup ports list` show which.
 */

/** Where a pin's value was read. */
export type PinOrigin =
  | {
      kind: "public-source";
      /** What the source says, in a few words. */
      title: string;
      url: string;
    }
  | {
      kind: "read-on-device";
      /** The record of the device run on which the value was read (`<port>/<slug>`). */
      record: string;
    };

export interface Pin {
  value: string;
  origin: PinOrigin;
}

/**
 * How install.sh compares a package's installed version with its pin: `exact` as `pip show`
 * prints it, or `release`: only the leading release numbers (PEP 440's release segment, before
 * any pre-release letter or `+local` part). `release` is for a pin that public sources state as a
 * release while the image's build adds its own suffix, which only a device run can read.
 */
export type VersionMatch = "exact" | "release";

export interface PackagePin extends Pin {
  /** As pip names the distribution. */
  name: string;
  /** What the pin belongs to, for messages: "Gaudi software", "vLLM", ... */
  role: string;
  match: VersionMatch;
}

/** A source tree the Dockerfile builds into the stock image, as vllm-gaudi's documentation does. */
export interface SourceBuild {
  repository: string;
  /** A tag, so the build is repeatable. */
  ref: string;
  /** The environment pip builds it with. */
  env: [name: string, value: string][];
}

export interface Platform {
  /** The row of vllm-gaudi's compatibility matrix the recipes follow: the newest validated one. */
  row: { vllmGaudi: string; gaudiSoftware: string; pytorch: string; origin: PinOrigin };
  /** The stock image, `FROM` in every Dockerfile. A tag until someone reads its digest. */
  image: Pin;
  /** Build number of the Gaudi software release (habanalabs-graph `<version>-<build>`). */
  gaudiBuild: Pin;
  /** The image's Python, major.minor. */
  python: Pin;
  /** Python packages install.sh checks: the Gaudi PyTorch plugin, PyTorch, vLLM, vllm-gaudi. */
  packages: PackagePin[];
  /** What the Dockerfile builds on the stock image before install.sh checks it: vLLM, then vllm-gaudi. */
  builds: { vllm: SourceBuild; vllmGaudi: SourceBuild };
  /** Device runs of a port's recipe, by port: none yet. */
  deviceRuns: Record<string, string[]>;
}

const GAUDI_REPO = "https://github.com/vllm-project/vllm-gaudi";
const RELEASE = "v0.26.0";

const matrix: PinOrigin = {
  kind: "public-source",
  title:
    "vllm-gaudi's compatibility matrix: the latest validated release is vLLM 0.26.0 on Gaudi software 1.24.1",
  url: `${GAUDI_REPO}/blob/091bbadda10bee4fd3f6d0efc1844d2610dd2707/docs/getting_started/compatibility_matrix.md`,
};

const ubuntuDockerfile = (what: string): PinOrigin => ({
  kind: "public-source",
  title: `vllm-gaudi ${RELEASE}'s Ubuntu Dockerfile: ${what}`,
  url: `${GAUDI_REPO}/blob/${RELEASE}/.cd/Dockerfile.ubuntu.pytorch.vllm`,
});

export const PLATFORM: Platform = {
  row: {
    vllmGaudi: "0.26.0",
    gaudiSoftware: "1.24.1",
    pytorch: "2.11.0",
    origin: matrix,
  },
  image: {
    value: "vault.habana.ai/gaudi-docker/1.24.1/ubuntu24.04/habanalabs/pytorch-installer-2.11.0:latest",
    origin: ubuntuDockerfile("FROM its default VERSION=1.24.1, BASE_NAME=ubuntu24.04, PT_VERSION=2.11.0"),
  },
  gaudiBuild: {
    value: "482",
    origin: {
      kind: "public-source",
      title: `vllm-gaudi ${RELEASE}'s UBI Dockerfile installs Gaudi software 1.24.1 at SYNAPSE_REVISION=482`,
      url: `${GAUDI_REPO}/blob/${RELEASE}/.cd/Dockerfile.rhel.ubi.vllm`,
    },
  },
  python: {
    value: "3.12",
    origin: {
      kind: "public-source",
      title: "the image is Ubuntu 24.04, whose python3 is 3.12 (vllm-gaudi requires Python below 3.13)",
      url: "https://packages.ubuntu.com/noble/python3",
    },
  },
  packages: [
    {
      name: "habana-torch-plugin",
      role: "Gaudi software",
      value: "1.24.1.482",
      match: "exact",
      origin: {
        kind: "public-source",
        title: "Gaudi software 1.24.1 build 482 ships habana-torch-plugin <version>.<build>",
        url: `${GAUDI_REPO}/blob/${RELEASE}/.cd/Dockerfile.rhel.ubi.vllm`,
      },
    },
    {
      name: "torch",
      role: "PyTorch",
      value: "2.11.0",
      match: "release",
      origin: {
        kind: "public-source",
        title: `vllm-gaudi ${RELEASE} documents PyTorch 2.11.0 (mkdocs extra PT_VERSION); Intel's build adds a suffix`,
        url: `${GAUDI_REPO}/blob/${RELEASE}/mkdocs.yaml`,
      },
    },
    {
      name: "vllm",
      role: "vLLM",
      value: "0.26.0+empty",
      match: "exact",
      origin: {
        kind: "public-source",
        title: "vLLM built from tag v0.26.0 with VLLM_TARGET_DEVICE=empty versions itself <tag>+empty",
        url: "https://github.com/vllm-project/vllm/blob/v0.26.0/setup.py",
      },
    },
    {
      name: "vllm-gaudi",
      role: "vllm-gaudi",
      value: "0.26.0",
      match: "exact",
      origin: {
        kind: "public-source",
        title: `vllm-gaudi built from tag ${RELEASE} takes its version from the tag (setuptools-scm)`,
        url: `${GAUDI_REPO}/blob/${RELEASE}/setup.py`,
      },
    },
  ],
  builds: {
    vllm: {
      repository: "https://github.com/vllm-project/vllm.git",
      ref: "v0.26.0",
      env: [["VLLM_TARGET_DEVICE", "empty"]],
    },
    vllmGaudi: {
      repository: `${GAUDI_REPO}.git`,
      ref: RELEASE,
      env: [["VLLM_TARGET_DEVICE", "hpu"]],
    },
  },
  deviceRuns: {},
};

/** One line saying where a pin's value comes from, for comments and pages. */
export function describeOrigin(origin: PinOrigin): string {
  return origin.kind === "public-source"
    ? `public source, not read on a device: ${origin.title} (${origin.url})`
    : `read on a device, record ${origin.record}`;
}
