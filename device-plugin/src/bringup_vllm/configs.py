"""transformers config classes for the model types transformers does not know.

vLLM builds a checkpoint's config through transformers' AutoConfig before it looks for the model
class, and refuses a `model_type` transformers has not registered ("Transformers does not
recognize this architecture"). The families read config.json themselves (config_check.py); these
classes only carry its fields through as attributes, as transformers does for any config.
"""

from typing import Any

from transformers import PretrainedConfig


class MinimaxM3Config(PretrainedConfig):
    """config.json of a MiniMax-M3 checkpoint (gpt-oss's field names), every field kept."""

    model_type = "minimax_m3"


# Muse Glimmer's patch 1 (bringup_vllm/glimmer.py): its name for each Qwen3-MoE expert field.
GLIMMER_EXPERT_FIELDS = {"moe_num_experts": "num_experts", "moe_top_k": "num_experts_per_tok"}


class MuseGlimmerConfig(PretrainedConfig):
    """config.json of a Muse Glimmer checkpoint (the port's own fields), every field kept.

    Also under Qwen3-MoE's names for the expert fields (patch 1): vLLM's Qwen3-MoE block reads
    `num_experts` and `num_experts_per_tok` from the config object. glimmer.py refuses a
    config.json that spells them both ways.

    vLLM 0.32 ships a `muse_glimmer` of its own (vllm/transformers_utils/configs/muse_glimmer.py,
    models/muse_glimmer.py: a dense, multimodal Gemma 2 derivative with iRoPE and an attention
    output gate), which is not the port's reading; register() puts this class in its place.
    """

    model_type = "muse_glimmer"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for glimmer, qwen in GLIMMER_EXPERT_FIELDS.items():
            if getattr(self, glimmer, None) is not None:
                setattr(self, qwen, getattr(self, glimmer))
        # The llama family's qwen3_moe default (src/engine/models/llama.ts); vLLM's block reads it.
        if getattr(self, "norm_topk_prob", None) is None:
            self.norm_topk_prob = False


class MuseSparkConfig(PretrainedConfig):
    """config.json of a Muse Spark Open checkpoint (Nemotron-H's MoE fields), every field kept."""

    model_type = "muse_spark"


class Glm53FlashConfig(PretrainedConfig):
    """config.json of a GLM-5.3-Flash checkpoint (Kimi Linear's and DeepSeek-V4's fields), kept."""

    model_type = "glm5_3_flash"


CONFIGS: tuple[type[PretrainedConfig], ...] = (
    MinimaxM3Config,
    Glm53FlashConfig,
    MuseGlimmerConfig,
    MuseSparkConfig,
)
