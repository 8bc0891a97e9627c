import { describe, expect, it } from "vitest";
import { renderRecipe } from "./recipe.js";
import { manifest, port } from "./tests/fixture.js";

const REFERENCE = {
  config: { model_type: "demo" },
  max_model_len: 2048,
  gates: [
    {
      kind: "perplexity",
      reference: "the full layout",
      max_relative_diff: 0,
      record: "demo/reference-perplexity",
    },
  ],
};

describe("renderRecipe", () => {
  it("says a port without engine model code has no recipe yet, and why", () => {
    const section = renderRecipe(port("/r", manifest("demo"), "# Demo\n"));
    expect(section).toContain("No recipe yet\\: the port has no engine model code yet");
    expect(section).not.toContain("**Serve:**");
  });

  it("shows a port's build, serve command, environment, and each pin with where it comes from", () => {
    const withCode = manifest("demo", {
      model: { name: "Demo", family: "Test", context_length: 4096 },
      reference: REFERENCE,
    } as Parameters<typeof manifest>[1]);
    const section = renderRecipe(port("/r", withCode, "# Demo\n"));
    expect(section).toContain("**Not yet run on a device.**");
    expect(section).toContain(
      '- **Serve:** `PT_HPU_LAZY_MODE=1 PT_HPU_ENABLE_LAZY_COLLECTIVES=true python3.12 -m vllm.entrypoints.openai.api_server --model "$MODEL" --served-model-name demo --host 127.0.0.1 --port 8000 --tensor-parallel-size 8 --max-model-len 4096`',
    );
    expect(section).toContain("| `PT_HPU_LAZY_MODE` | `1` |");
    expect(section).toMatch(
      /\| `habana-torch-plugin` \| `1\.24\.1\.482` \| public source, not read on a device: \[.*\]\(https:\/\/github\.com\/vllm-project\/vllm-gaudi\/blob\/v0\.26\.0\/\.cd\/Dockerfile\.rhel\.ubi\.vllm\) \|/,
    );
    expect(section).toContain("| `torch` | `2.11.0` \\(release\\; any build suffix\\) |");
    expect(section).toContain("`docker build -f ports/demo/recipe/Dockerfile -t bringup/demo .`");
  });

  it("says a port vLLM does not serve has no serve command or device gate, and where its blocks are checked", () => {
    const blocks = manifest("demo", {
      reference: {
        ...REFERENCE,
        device_blocks: {
          test: "tests/test_demo_blocks.py",
          not_served: "vLLM has no cache for the demo's recurrent state.",
          blocks: ["the recurrent block"],
          record: "demo/device-blocks",
        },
      },
    } as Parameters<typeof manifest>[1]);
    const section = renderRecipe(port("/r", blocks, "# Demo\n"));
    expect(section).not.toContain("**Serve:**");
    expect(section).not.toContain("TINY_MODEL");
    expect(section).toContain(
      "- **Not served:** vLLM does not serve this port\\'s device code here\\: vLLM has no cache for the demo\\'s recurrent state\\.",
    );
    expect(section).toContain("exits 3 without serving anything");
    expect(section).toContain("`bringup device check demo` \\(records `demo/device-blocks`\\)\\.");
  });
});
