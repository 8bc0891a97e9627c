import { describe, expect, it } from "vitest";
import { BringupError } from "../common/errors.js";
import { fixtureManifest } from "./fixtures/index.js";
import { resolveRecipe } from "./pins.js";
import { modeEnv, serveCommandLine, serveEnv } from "./serve.js";

describe("serve", () => {
  it("sets the execution mode's environment", () => {
    expect(modeEnv("lazy", true, 8)).toEqual([
      ["PT_HPU_LAZY_MODE", "1"],
      ["PT_HPU_ENABLE_LAZY_COLLECTIVES", "true"],
    ]);
    expect(modeEnv("lazy", true, 1)).toEqual([["PT_HPU_LAZY_MODE", "1"]]);
    expect(modeEnv("lazy", false, 8)).toEqual([["PT_HPU_LAZY_MODE", "1"]]);
    expect(modeEnv("torch-compile-static", true, 8)).toEqual([
      ["PT_HPU_LAZY_MODE", "0"],
      ["VLLM_T_COMPILE_DYNAMIC_SHAPES", "false"],
    ]);
  });

  it("adds the port's variables in name order and refuses ones that contradict the mode", () => {
    expect(serveEnv("p", "lazy", true, 1, { B: "2", A: "1", PT_HPU_LAZY_MODE: "1" })).toEqual([
      ["PT_HPU_LAZY_MODE", "1"],
      ["A", "1"],
      ["B", "2"],
    ]);
    expect(() => serveEnv("p", "lazy", true, 1, { PT_HPU_LAZY_MODE: "0" })).toThrow(BringupError);
    expect(() => serveEnv("p", "lazy", true, 1, { "A B": "0" })).toThrow(/not an environment variable name/);
  });

  it("writes the serve command a person can paste", async () => {
    expect(serveCommandLine(resolveRecipe(await fixtureManifest("complete-lazy")))).toBe(
      "PT_HPU_LAZY_MODE=1 PT_HPU_ENABLE_LAZY_COLLECTIVES=true VLLM_SKIP_WARMUP=true python3.12 -m vllm.entrypoints.openai.api_server " +
        '--model "$MODEL" --served-model-name fixture-lazy --host 127.0.0.1 --port 8000 --tensor-parallel-size 8 --max-model-len 262144',
    );
    expect(serveCommandLine(resolveRecipe(await fixtureManifest("complete-compile")))).toBe(
      "PT_HPU_LAZY_MODE=0 VLLM_T_COMPILE_DYNAMIC_SHAPES=false python3.12 -m vllm.entrypoints.openai.api_server " +
        '--model "$MODEL" --served-model-name fixture-compile --host 127.0.0.1 --port 8000 --tensor-parallel-size 1 --max-model-len 4096 --enforce-eager',
    );
  });
});
