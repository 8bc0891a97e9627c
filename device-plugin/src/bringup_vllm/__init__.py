"""bringup's device model code as a vLLM general plugin.

vLLM loads every `vllm.general_plugins` entry point in each process it starts (the API server,
the engine core, every worker) and may do so more than once, so `register()` only records lazy
"module:Class" strings with `ModelRegistry.register_model` (vLLM docs/design/plugin_system.md;
the example package is vllm-project/bart-plugin) and imports no model code itself.
"""

from bringup_vllm.families import ARCHITECTURES

__all__ = ["ARCHITECTURES", "register"]


def register() -> None:
    """Register each family's architecture names with vLLM; calling it again changes nothing.

    Model types transformers does not know get a config class that keeps config.json's fields, since
    vLLM reads every config through transformers' AutoConfig first (or its own config registry,
    where it has one of the same name).

    The plugin's class replaces vLLM's own where a name is already registered
    (MiMoV2FlashForCausalLM): the ports' checkpoints spell their config as bringup's engine
    reads it, and the plugin's blocks run where vLLM's CPU backend lacks a kernel.
    """
    from transformers import AutoConfig
    from vllm import ModelRegistry
    from vllm.transformers_utils.config import _CONFIG_REGISTRY

    from bringup_vllm.configs import CONFIGS

    for config in CONFIGS:
        AutoConfig.register(config.model_type, config, exist_ok=True)
        # vLLM 0.32 ships its own config class for `muse_glimmer` (a different model under the
        # same name, see configs.py) and prefers its registry to AutoConfig's.
        if config.model_type in _CONFIG_REGISTRY:
            _CONFIG_REGISTRY[config.model_type] = config
    for architecture, target in ARCHITECTURES.items():
        ModelRegistry.register_model(architecture, target)
