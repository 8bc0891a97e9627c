"""transformers config classes for the model types transformers does not know.

vLLM builds a checkpoint's config through transformers' AutoConfig before it looks for the model
class, and refuses a `model_type` transformers has not registered ("Transformers does not
recognize this architecture"). The families read config.json themselves (config_check.py); these
classes only carry its fields through as attributes, as transformers does for any config.
"""

from transformers import PretrainedConfig


class MinimaxM3Config(PretrainedConfig):
    """config.json of a MiniMax-M3 checkpoint (gpt-oss's field names), every field kept."""

    model_type = "minimax_m3"


class Glm53FlashConfig(PretrainedConfig):
    """config.json of a GLM-5.3-Flash checkpoint (Kimi Linear's and DeepSeek-V4's fields), kept."""

    model_type = "glm5_3_flash"


CONFIGS: tuple[type[PretrainedConfig], ...] = (MinimaxM3Config, Glm53FlashConfig)
