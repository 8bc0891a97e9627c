/**
 * Platform findings: what the ports' device code has to work around in vllm-gaudi, each read in
 * vllm-gaudi's source at the release the recipes pin (src/recipes/platform.ts) and linked to the
 * lines that show it. The site renders them as one page; none is a device observation, since no
 * recipe has run on a device yet.
 */

export interface Source {
  title: string;
  url: string;
}

export interface PlatformFinding {
  /** Anchor on the page. */
  id: string;
  title: string;
  /** What vllm-gaudi does, as its source shows. */
  finding: string;
  /** What a port's device code does about it. */
  workaround: string;
  /** Port ids whose device code meets it. */
  ports: string[];
  sources: Source[];
}

const TAG = "https://github.com/vllm-project/vllm-gaudi/blob/v0.26.0";

const ENGINE_PORTS = [
  "mimo-v2.6-flash",
  "mimo-v2.6-pro",
  "minimax-m3",
  "kimi-k2.7-code",
  "glm-5-mxfp4",
  "glm-5.3-flash",
];

export const PLATFORM_FINDINGS: PlatformFinding[] = [
  {
    id: "no-triton",
    title: "No Triton and no CUDA custom ops",
    finding:
      "Triton is disabled on HPU, and vLLM built for the empty target device has none of vLLM's CUDA custom ops, so an upstream model that imports a Triton, FLA or CUDA kernel does not even import on Gaudi; vllm-gaudi's own ports rewrite such blocks in plain torch.",
    workaround:
      "Every block the device plugin adds is plain PyTorch with static shapes; everything vLLM has a layer for (attention, fused MoE, RMSNorm, rotary embedding, linear layers) is vLLM's layer, which vllm-gaudi replaces with its HPU version.",
    ports: ENGINE_PORTS,
    sources: [
      {
        title:
          "vllm_gaudi/models/minimax_m3_sparse.py: Triton is disabled on HPU; CUDA ops absent from the +empty build",
        url: `${TAG}/vllm_gaudi/models/minimax_m3_sparse.py#L3-L8`,
      },
      {
        title:
          "vllm_gaudi/models/minimax_m3.py: upstream's package imports CUDA custom ops and crashes on Gaudi",
        url: `${TAG}/vllm_gaudi/models/minimax_m3.py#L18-L26`,
      },
    ],
  },
  {
    id: "no-model-files",
    title: "No model files for these architectures",
    finding:
      "vllm-gaudi registers HPU model classes for a fixed list of architectures; MiMo-V2-Flash, Kimi Linear (KDA) and GLM-5's mHC residual are not among them, and vLLM's own classes for them rely on kernels HPU lacks.",
    workaround:
      "The plugin registers each family's architecture names itself (vllm.general_plugins, lazy ModelRegistry.register_model) with native vLLM model classes, reading the same config fields and tensor names as the engine's families.",
    ports: ENGINE_PORTS,
    sources: [
      {
        title: "vllm_gaudi/models/__init__.py: the architectures vllm-gaudi registers",
        url: `${TAG}/vllm_gaudi/models/__init__.py`,
      },
      {
        title: "vLLM docs/design/plugin_system.md: out-of-tree models through vllm.general_plugins",
        url: "https://github.com/vllm-project/vllm/blob/v0.26.0/docs/design/plugin_system.md",
      },
    ],
  },
  {
    id: "mla-no-sliding-window",
    title: "HPU MLA takes no sliding window, ALiBi or logit soft-cap",
    finding:
      "HPUMLAImpl raises NotImplementedError when a layer asks for a sliding window, ALiBi slopes or a logit soft-cap.",
    workaround:
      "The latent-attention ports attend over the full context, which HPU MLA serves; the plugin refuses a configuration that would put a sliding window on a latent-attention layer, by name, instead of failing inside vllm-gaudi.",
    ports: ["kimi-k2.7-code", "glm-5-mxfp4"],
    sources: [
      {
        title: "vllm_gaudi/attention/backends/hpu_attn.py: unsupported_features in HPUMLAImpl",
        url: `${TAG}/vllm_gaudi/attention/backends/hpu_attn.py#L246-L250`,
      },
    ],
  },
  {
    id: "dsa-as-dense-mla",
    title: "DeepSeek sparse attention runs as dense MLA",
    finding:
      "vllm-gaudi runs sparse (DSA) layers as dense MLA and never invokes the indexer, whose kernels and backend are CUDA-only; each layer then attends to every earlier token instead of the indexer's top-k.",
    workaround:
      "GLM-5's device code (bringup_vllm/glm5.py and dsa.py) scores and selects the top-k tokens itself in plain PyTorch, as the reference engine does (FP8 scores, ties to the earlier token), keeps each layer's keys, values and indexer keys in caches indexed by vLLM's KV-cache slots, and attends only the picked positions. Dense attention equals it only while the context is no longer than top-k, so the device-vs-reference gate scores windows twice the tiny config's top-k; served with the dsa-dense fault (every earlier token attended, as vllm-gaudi does), the plugin fails that gate.",
    ports: ["glm-5-mxfp4"],
    sources: [
      {
        title:
          "vllm_gaudi/attention/oot_mla.py: sparse layers run as dense MLA, the indexer is never invoked",
        url: `${TAG}/vllm_gaudi/attention/oot_mla.py#L270-L277`,
      },
      {
        title: "vllm_gaudi/attention/oot_mla.py: use_sparse=False, the dense-MLA fallback",
        url: `${TAG}/vllm_gaudi/attention/oot_mla.py#L296-L297`,
      },
    ],
  },
  {
    id: "no-kda",
    title: "No KDA, and linear attention only as plain PyTorch",
    finding:
      "vllm-gaudi has no Kimi Delta Attention: upstream's KDA kernels are FLA Triton kernels. Its one delta-rule layer, Qwen3.5's Gated DeltaNet, is written in plain PyTorch tensor ops to avoid Triton and CUDA-only kernels.",
    workaround:
      "GLM-5.3-Flash's KDA layers (short convolutions with their tails, per-channel decay, the delta-rule recurrence with a per-sequence state, in 64-token chunks or token by token) and its four-stream mHC residual are plain PyTorch in the plugin (device-plugin/src/bringup_vllm/kda.py, mhc.py, glm_flash.py). The state would need vLLM's Mamba-style state cache, which neither vLLM's CPU backend nor vllm-gaudi has for KDA, so the plugin does not serve the model yet (its class refuses, saying so) and every block is tested against the engine layer by layer instead (bringup device check glm-5.3-flash).",
    ports: ["glm-5.3-flash"],
    sources: [
      {
        title:
          "vllm_gaudi/ops/hpu_gdn_pytorch.py: Gated DeltaNet in plain PyTorch, avoiding Triton/CUDA-only kernels",
        url: `${TAG}/vllm_gaudi/ops/hpu_gdn_pytorch.py#L3-L10`,
      },
      {
        title: "vLLM model_executor/layers/kda.py: upstream KDA built on FLA kernels",
        url: "https://github.com/vllm-project/vllm/blob/v0.26.0/vllm/model_executor/layers/kda.py",
      },
    ],
  },
  {
    id: "sliding-window-and-sinks",
    title: "Sliding windows and sinks on standard attention",
    finding:
      "The HPU attention backend for standard (non-latent) attention takes a per-layer sliding window, with a window block list for decode, and per-head sink logits.",
    workaround:
      "MiMo's device code composes vLLM's Attention with each layer's window and sinks rather than writing its own; its query/key and value heads of different sizes still have to be checked on a device, which has not happened yet.",
    ports: ["mimo-v2.6-flash", "mimo-v2.6-pro"],
    sources: [
      {
        title: "vllm_gaudi/attention/backends/hpu_attn.py: sliding_window and sinks in HPUAttentionImpl",
        url: `${TAG}/vllm_gaudi/attention/backends/hpu_attn.py#L455-L483`,
      },
      {
        title: "vllm_gaudi/attention/backends/hpu_attn.py: the window block list on decode",
        url: `${TAG}/vllm_gaudi/attention/backends/hpu_attn.py#L629-L645`,
      },
    ],
  },
  {
    id: "mxfp4-experts",
    title: "MXFP4 experts: dequantized to BF16 unless HPU_MXFP4_NATIVE=1",
    finding:
      "By default vllm-gaudi drops the MXFP4 quantization config and dequantizes the experts to BF16 at load time; HPU_MXFP4_NATIVE=1 keeps packed weights for its fused MXFP4 MoE kernel, wired for gpt-oss's MoE method.",
    workaround:
      "Ports with MXFP4 experts load them through vLLM's MXFP4 path and state which of the two strategies they were gated with; the engine's exact MXFP4 decode is the reference either way.",
    ports: ["mimo-v2.6-pro", "minimax-m3", "kimi-k2.7-code", "glm-5-mxfp4"],
    sources: [
      {
        title:
          "vllm_gaudi/models/gptoss_mxfp4.py: HPU_MXFP4_NATIVE selects native kernel or BF16 dequantization",
        url: `${TAG}/vllm_gaudi/models/gptoss_mxfp4.py#L24-L31`,
      },
      {
        title: "vllm_gaudi/ops/hpu_mxfp4.py: the HPU override of GptOssMxfp4MoEMethod",
        url: `${TAG}/vllm_gaudi/ops/hpu_mxfp4.py#L3-L7`,
      },
    ],
  },
  {
    id: "clamped-swiglu",
    title: "Clamped SwiGLU is in HPU fused MoE",
    finding:
      "vllm-gaudi's fused MoE applies gpt-oss's clamped SwiGLU, reading swiglu_alpha, swiglu_beta and swiglu_limit from the model config (limit 7.0 when absent).",
    workaround:
      "MiniMax-M3's experts use vLLM's FusedMoE with the clamp instead of a block of their own; the config must state the limit the checkpoint was trained with, since the default applies silently.",
    ports: ["minimax-m3"],
    sources: [
      {
        title: "vllm_gaudi/ops/hpu_fused_moe.py: swiglu_alpha, swiglu_beta, swiglu_limit",
        url: `${TAG}/vllm_gaudi/ops/hpu_fused_moe.py#L375-L383`,
      },
    ],
  },
  {
    id: "fused-moe-silu-gelu-only",
    title: "HPU fused MoE runs SiLU or GELU experts only",
    finding:
      "The Habana fused-MoE kernel (torch.ops.hpu.mixture_of_experts) supports only silu and gelu experts and combines their outputs inside the kernel; vllm-gaudi computes MiniMax-M3's other activation unfused in PyTorch, every expert over a tile of tokens with static shapes.",
    workaround:
      "Muse Spark Open's experts are relu2 and each output passes through the expert's own RMSNorm before the router weights combine them, which no fused-MoE call has a place for: its latent MoE is plain PyTorch with static shapes in the plugin (every expert on every token, the unchosen ones weighted zero), routed by vLLM's grouped_topk.",
    ports: ["muse-spark-open"],
    sources: [
      {
        title: "vllm_gaudi/ops/hpu_fused_moe.py: the fused-MoE kernel supports only silu/gelu",
        url: `${TAG}/vllm_gaudi/ops/hpu_fused_moe.py#L56-L59`,
      },
      {
        title:
          "vllm_gaudi/ops/hpu_fused_moe.py: the unfused expert pass tiled over tokens with static shapes",
        url: `${TAG}/vllm_gaudi/ops/hpu_fused_moe.py#L61-L67`,
      },
    ],
  },
  {
    id: "alibi-only-position-bias",
    title: "ALiBi slopes are the only positional bias HPU attention takes",
    finding:
      "HPUAttentionImpl takes a positional bias only as ALiBi slopes (and then not with the FusedSDPA or flex prefill); there is no place for a learned logit per head and distance bucket. Causal short convolutions exist as plain PyTorch for vLLM's Mamba layers, whose per-sequence conv state vLLM keeps in its Mamba-style cache.",
    workaround:
      "Inkling-Small's attention adds T5's learned relative-position logit per head and its keys and values pass through short convolutions with per-sequence tails, so it is not served by vLLM: its blocks are plain PyTorch in the plugin, checked against the engine block by block; a served form would put the tails in the Mamba-style state cache and the bias in an attention of its own.",
    ports: ["inkling-small"],
    sources: [
      {
        title:
          "vllm_gaudi/attention/backends/hpu_attn.py: alibi_slopes, the one positional bias of HPUAttentionImpl",
        url: `${TAG}/vllm_gaudi/attention/backends/hpu_attn.py#L446-L463`,
      },
      {
        title: "vllm_gaudi/ops/causal_conv1d_pytorch.py: causal conv1d for Mamba layers in plain PyTorch",
        url: `${TAG}/vllm_gaudi/ops/causal_conv1d_pytorch.py#L6-L15`,
      },
    ],
  },
];
