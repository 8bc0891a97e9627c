/**
 * The KV cache token capacity a Prometheus /metrics page states: bringup's
 * `bringup:kv_cache_token_capacity`, or vLLM's `vllm:cache_config_info` labels
 * (num_gpu_blocks × block_size). Undefined when neither is there.
 */
export function kvTokenCapacity(metricsText: string): number | undefined {
  for (const line of metricsText.split("\n")) {
    const ours = /^bringup:kv_cache_token_capacity(?:\{[^}]*\})?\s+([0-9.eE+-]+)\s*$/.exec(line);
    if (ours) return Number(ours[1]);
  }
  for (const line of metricsText.split("\n")) {
    if (!line.startsWith("vllm:cache_config_info{")) continue;
    const blocks = /num_gpu_blocks="(\d+)"/.exec(line)?.[1];
    const blockSize = /block_size="(\d+)"/.exec(line)?.[1];
    if (blocks !== undefined && blockSize !== undefined) return Number(blocks) * Number(blockSize);
  }
  return undefined;
}
