import { BringupError } from "../common/errors.js";
import { shellWord } from "./shell.js";
import type { Recipe } from "./source.js";

/** The OpenAI-compatible server module of vLLM; vllm-gaudi plugs the HPU in underneath it. */
export const VLLM_SERVER_MODULE = "vllm.entrypoints.openai.api_server";

/**
 * The environment an execution mode needs, from the Gaudi and vllm-gaudi documentation:
 * PT_HPU_LAZY_MODE selects lazy (1) or torch.compile (0) execution, and its default has changed
 * between releases, so it is always set; tensor-parallel HPU graphs in lazy mode need lazy
 * collectives; VLLM_T_COMPILE_DYNAMIC_SHAPES=false keeps torch.compile on static shapes.
 */
export function modeEnv(
  mode: Recipe["executionMode"],
  hpuGraphs: boolean,
  cards: number,
): [name: string, value: string][] {
  if (mode === "lazy") {
    const env: [string, string][] = [["PT_HPU_LAZY_MODE", "1"]];
    if (hpuGraphs && cards > 1) env.push(["PT_HPU_ENABLE_LAZY_COLLECTIVES", "true"]);
    return env;
  }
  return [
    ["PT_HPU_LAZY_MODE", "0"],
    ["VLLM_T_COMPILE_DYNAMIC_SHAPES", "false"],
  ];
}

/** The mode's environment followed by the port's own; a port may add variables but not contradict the mode. */
export function serveEnv(
  port: string,
  mode: Recipe["executionMode"],
  hpuGraphs: boolean,
  cards: number,
  extra: Record<string, string>,
): [name: string, value: string][] {
  const env = modeEnv(mode, hpuGraphs, cards);
  for (const [name, value] of Object.entries(extra).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw new BringupError(
        "RECIPE_VALUE_UNSAFE",
        `port ${port}: software.serve_env has the name ${JSON.stringify(name)}, which is not an environment variable name; use letters, digits and _ such as VLLM_SKIP_WARMUP.`,
        { subject: "software.serve_env" },
      );
    }
    const set = env.find(([known]) => known === name);
    if (set === undefined) {
      env.push([name, value]);
    } else if (set[1] !== value) {
      throw new BringupError(
        "RECIPE_ENV_CONFLICT",
        `port ${port}: software.serve_env.${name} is ${value}, but execution_mode ${mode} sets it to ${set[1]}; remove it from serve_env or change execution_mode.`,
        { subject: `software.serve_env.${name}` },
      );
    }
  }
  return env;
}

/**
 * Arguments after the interpreter, grouped as each option with its value; `model` and `httpPort`
 * are passed through as given (run_gates.sh passes shell variables). `full` serves the released
 * model as the port states (its cards and context); `tiny` serves the port's tiny reference
 * checkpoint on one card at the context the reference engine serves it with.
 */
export function serveArgs(
  recipe: Recipe,
  model: string,
  httpPort: string,
  size: "full" | "tiny" = "full",
): string[][] {
  const maxModelLen = size === "tiny" ? recipe.tinyMaxModelLen : recipe.maxModelLen;
  const args = [
    ["-m", VLLM_SERVER_MODULE],
    ["--model", model],
    ["--served-model-name", recipe.port],
    ["--host", "127.0.0.1"],
    ["--port", httpPort],
    ["--tensor-parallel-size", String(size === "tiny" ? 1 : recipe.cards)],
  ];
  if (maxModelLen !== undefined) args.push(["--max-model-len", String(maxModelLen)]);
  // HPU graphs are vllm-gaudi's default; --enforce-eager turns them off.
  if (!recipe.hpuGraphs) args.push(["--enforce-eager"]);
  return args;
}

/** The serve command as one line a person can paste (MODEL is theirs to set), for the port's page. */
export function serveCommandLine(recipe: Recipe): string {
  const env = recipe.env.map(([name, value]) => `${name}=${shellWord(value)}`);
  const args = serveArgs(recipe, "MODEL", "8000")
    .flat()
    .map((arg) => (arg === "MODEL" ? '"$MODEL"' : shellWord(arg)));
  return [...env, `python${recipe.python.value}`, ...args].join(" ");
}
