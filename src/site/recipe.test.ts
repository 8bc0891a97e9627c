import { describe, expect, it } from "vitest";
import { renderRecipe } from "./recipe.js";
import { manifest, port } from "./tests/fixture.js";

const DIGEST = `sha256:${"0".repeat(63)}1`;

describe("renderRecipe", () => {
  it("says a port without validated pins has no recipe yet, naming what is missing", () => {
    const section = renderRecipe(port("/r", manifest("demo"), "# Demo\n"));
    expect(section).toContain("No recipe yet");
    expect(section).toContain("`bringup recipe demo`");
    expect(section).toContain("`software.base_image`");
    expect(section).not.toContain("**Serve:**");
  });

  it("shows a pinned port's build, serve command, environment and packages", () => {
    const pinned = manifest("demo", {
      model: { name: "Demo", family: "Test", context_length: 4096 },
      software: {
        gaudi_software: "1.24.1",
        base_image: `registry.example.test/demo:1@${DIGEST}`,
        execution_mode: "lazy",
        hpu_graphs: true,
        pins: {
          gaudi_build: "100",
          python: "3.12",
          vllm: "0.0.1",
          vllm_gaudi: "0.0.2",
          torch: "2.0.3",
          packages: {},
        },
      },
    });
    const section = renderRecipe(port("/r", pinned, "# Demo\n"));
    expect(section).toContain(`Built from \`registry.example.test/demo:1@${DIGEST}\``);
    expect(section).toContain(
      '- **Serve:** `PT_HPU_LAZY_MODE=1 PT_HPU_ENABLE_LAZY_COLLECTIVES=true python3.12 -m vllm.entrypoints.openai.api_server --model "$MODEL" --served-model-name demo --host 127.0.0.1 --port 8000 --tensor-parallel-size 8 --max-model-len 4096`',
    );
    expect(section).toContain("| `PT_HPU_LAZY_MODE` | `1` |");
    expect(section).toContain("| `habana-torch-plugin` | `1.24.1.100` |");
    expect(section).toContain(
      "- **Build** (from the repository root): `docker build -f ports/demo/recipe/Dockerfile -t bringup/demo .`",
    );
  });
});
