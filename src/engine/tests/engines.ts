import { afterAll } from "vitest";
import { Engine, type EngineOptions } from "../engine.js";
import type { LoadedModel } from "../model/loaded-model.js";
import type { StepOutput } from "../request.js";

/**
 * A factory of engines over `model` with `defaults`, each closed after the test file's tests
 * (call at the top level of a test file).
 */
export function engineFactory(
  model: LoadedModel,
  defaults: EngineOptions,
): (options?: EngineOptions, other?: LoadedModel) => Engine {
  const engines: Engine[] = [];
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()));
  });
  return (options = {}, other = model) => {
    const e = new Engine(other, { ...defaults, ...options });
    engines.push(e);
    return e;
  };
}

/** Every output of a request's stream, in order. */
export async function collect(stream: AsyncIterable<StepOutput>): Promise<StepOutput[]> {
  const out: StepOutput[] = [];
  for await (const o of stream) out.push(o);
  return out;
}
