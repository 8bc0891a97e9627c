import type { PackagePin, Pin, Platform } from "./platform.js";

/**
 * The part of a port manifest a recipe is made from. Declared here, structurally, so `recipes/`
 * needs nothing from `catalog/` and the catalog's linter can call the recipe freshness check
 * without an import cycle; a parsed `PortManifest` is assignable to it. The image's pins are not
 * here: they live in one place for every port, `platform.ts`.
 */
export interface RecipeManifest {
  id: string;
  model: { context_length?: number };
  target: { accelerator: string; cards: number; nodes: number };
  software: {
    gaudi_software: string;
    execution_mode: "lazy" | "torch-compile-static";
    hpu_graphs: boolean;
    serve_env?: Record<string, string>;
  };
  /** The tiny reference config the engine runs; a port has a recipe only with one. */
  reference?: {
    max_model_len: number;
    /** Present when vLLM does not serve the port's device code: its blocks are checked on the CPU instead. */
    device_blocks?: { not_served: string; record: string };
  };
}

/** A Python package the image must hold, with its normalized name for lookups. */
export interface PinnedPackage extends PackagePin {
  /** Compared the way pip compares names: lower case, each run of - _ . as one -. */
  normalized: string;
}

/** Everything the generated files state: the port's serving and the platform's pins. */
export interface Recipe {
  port: string;
  /** The stock image, `FROM`. */
  image: Pin;
  gaudiVersion: string;
  gaudiBuild: Pin;
  /** major.minor */
  python: Pin;
  /** The Gaudi plugin, torch, vllm and vllm-gaudi. */
  packages: PinnedPackage[];
  /** What the Dockerfile builds on the stock image before install.sh checks it. */
  builds: Platform["builds"];
  cards: number;
  /** The full model's context when the manifest states it; otherwise vLLM takes the checkpoint's. */
  maxModelLen?: number;
  /** The tiny reference checkpoint's context, for the device-vs-reference gate. */
  tinyMaxModelLen: number;
  executionMode: "lazy" | "torch-compile-static";
  hpuGraphs: boolean;
  /** The server's environment, in the order it is set. */
  env: [name: string, value: string][];
  /** Records of device runs of this recipe; empty until one is recorded. */
  deviceRuns: string[];
  /**
   * Present when vLLM does not serve the port's device code (the manifest's
   * `reference.device_blocks`): why, on one line, and the record series of `bringup device check`,
   * which checks its blocks one by one on the CPU instead.
   */
  notServed?: { why: string; record: string };
}

export function normalizePackageName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, "-");
}

/** A pin as pages and comments state it: its name, value and origin, and whether it matches by release. */
export interface StatedPin {
  name: string;
  pin: Pin;
  release: boolean;
}
