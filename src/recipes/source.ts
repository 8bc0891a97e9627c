/**
 * The part of a port manifest a recipe is made from. Declared here, structurally, so `recipes/`
 * needs nothing from `catalog/` and the catalog's linter can call the recipe freshness check
 * without an import cycle; a parsed `PortManifest` is assignable to it.
 */
export interface RecipeManifest {
  id: string;
  model: { context_length?: number };
  target: { accelerator: string; cards: number; nodes: number };
  software: {
    gaudi_software: string;
    base_image?: string;
    execution_mode: "lazy" | "torch-compile-static";
    hpu_graphs: boolean;
    pins?: {
      gaudi_build?: string;
      python?: string;
      vllm?: string;
      vllm_gaudi?: string;
      torch?: string;
      packages?: Record<string, string>;
    };
    serve_env?: Record<string, string>;
  };
}

/** A Python package the image must hold at an exact version. */
export interface PinnedPackage {
  /** As the manifest spells it, for messages. */
  name: string;
  /** Compared the way pip compares names: lower case, each run of - _ . as one -. */
  normalized: string;
  version: string;
  /** What the pin belongs to, for messages: "Gaudi software", "vLLM", ... */
  role: string;
}

/** A manifest whose pins are complete: everything the generated files state. */
export interface Recipe {
  port: string;
  /** Image reference with its digest. */
  image: string;
  gaudiVersion: string;
  gaudiBuild: string;
  /** major.minor */
  python: string;
  /** The Gaudi plugin, torch, vllm and vllm-gaudi first, then the port's others by name. */
  packages: PinnedPackage[];
  cards: number;
  maxModelLen: number;
  executionMode: "lazy" | "torch-compile-static";
  hpuGraphs: boolean;
  /** The server's environment, in the order it is set. */
  env: [name: string, value: string][];
}

export function normalizePackageName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, "-");
}
