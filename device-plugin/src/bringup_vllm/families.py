"""Architecture name (a checkpoint's config.json `architectures`) to the plugin class serving it.

One module per family, as bringup's engine has one family per lineage (src/engine/models/); the
strings are imported lazily by vLLM, in the process that builds the model.
"""

ARCHITECTURES: dict[str, str] = {
    "DeepseekV3ForCausalLM": "bringup_vllm.deepseek:DeepseekForCausalLM",
    "GlmMoeDsaForCausalLM": "bringup_vllm.glm5:GlmMoeDsaForCausalLM",
    # Registered so vLLM names the reason it is not served (glm_flash.py); checked block by block.
    "Glm53FlashForCausalLM": "bringup_vllm.glm_flash:Glm53FlashForCausalLM",
    "MiMoV2FlashForCausalLM": "bringup_vllm.mimo:MiMoForCausalLM",
    "MiniMaxM3ForCausalLM": "bringup_vllm.minimax:MinimaxForCausalLM",
    "MuseGlimmerForCausalLM": "bringup_vllm.glimmer:GlimmerForCausalLM",
    "MuseSparkForCausalLM": "bringup_vllm.spark:SparkForCausalLM",
}
