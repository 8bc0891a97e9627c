"""DeepSeek-V4 (port deepseek-v4.1-flash): plain-PyTorch blocks, checked block by block.

Transcribed from bringup's engine, which follows HF transformers' `models/deepseek_v4`
(src/engine/models/deepseek-v4.ts; blocks/attention/v4-attention.ts, v4-compressor.ts,
v4-indexer.ts; blocks/mlp/v4-moe.ts; blocks/residual/mhc*.ts), with its config fields and tensor
names (`model.layers.N.self_attn.*`, `.mlp.*`, `.attn_hc.*`, `.ffn_hc.*`, `model.hc_head.*`,
`model.embed_tokens`, `model.norm`, `lm_head`):

- attention per `layer_types` (or legacy `compress_ratios`): a sliding window of
  `sliding_window` keys, plus every compressed row (heavily compressed, no overlap) or the
  indexer's `index_topk` best compressed rows (compressed sparse, overlapping windows); one key
  head shared by every query head and also the value (K = V); queries through a low-rank latent
  and an unweighted per-head norm; the trailing `qk_rope_head_dim` features rotated in adjacent
  pairs and rotated back on the output (`rope_theta` in sliding layers, `compress_rope_theta`
  with `rope_scaling`'s YaRN, attention factor 1, in the others); a learned sink per head in
  the softmax; the grouped output projection (`o_groups` x `o_lora_rank`, then o_b_proj);
- mHC between the sub-layers (mhc.py);
- MoE with sqrt(softplus) scores: top-k of score + e_score_correction_bias, or in the first
  `num_hash_layers` (or `mlp_layer_types` "hash_moe") the experts `tid2eid` gives the token id;
  chosen scores renormalized times routed_scaling_factor; experts' SwiGLU clamped at
  `swiglu_limit` (gate above, up both ways); one unclamped shared expert; experts stored MXFP4
  (`*_blocks`/`*_scales`, decoded by mxfp4.py).

The attention runs over a chunk of one sequence's rows with the cache the rows before it left
(AttentionCache: the window's keys, the compressed rows, the compressors' pending projections):
the whole sequence at once from an empty cache, or a prefill and then one token at a time, as the
engine's steps (`mixer_in_steps`). Its tensors grow with the sequence (plain PyTorch, not vLLM's
paged cache).

vLLM does not serve this port with the plugin: vLLM 0.32's own DeepseekV4ForCausalLM cannot load
the tiny checkpoint ("'DeepseekV4Config' object has no attribute 'compress_ratios'"; with
hf-overrides, "Unsupported head_dim for fused quant+cache: 16") and keeps an FP8 key cache, and
the plugin registers no class for the architecture. The blocks are held to the engine layer
output by layer output (tests/test_v4_blocks.py).

`mtp.*` tensors (the MTP draft layer, speculative decoding only) are not read here.
"""

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch.nn import functional as F

from bringup_vllm import faults
from bringup_vllm.config_check import Config
from bringup_vllm.mhc import HyperConnection, HyperHead, MhcConfig
from bringup_vllm.mxfp4 import decoded
from bringup_vllm.norm import rms_norm

FAMILY = "DeepSeek-V4"
KINDS = {
    "sliding_attention": "sliding",
    "compressed_sparse_attention": "csa",
    "heavily_compressed_attention": "hca",
}


def checked(c: Config) -> Config:
    """config.json as the engine reads it, refusing by name what this family does not compute."""
    c.require("model_type", ("deepseek_v4",), "the family's model_type")
    c.require("num_key_value_heads", (None, 1), "one key head, shared and also the value")
    c.require("attention_bias", (None, False), "the projections have no biases")
    c.require("mlp_bias", (None, False), "the projections have no biases")
    c.require("n_shared_experts", (None, 1), "one shared expert, as the engine's model")
    c.require("hidden_act", (None, "silu"), "the experts use SwiGLU")
    c.require("scoring_func", (None, "sqrtsoftplus"), "V4 scores experts by sqrt(softplus)")
    c.require("topk_method", (None, "noaux_tc"), "top-k with the score-correction bias, no groups")
    c.require("rope_parameters", (None,), "the engine reads rope_theta and rope_scaling instead")
    scaling = c.get("rope_scaling")
    if scaling is not None:
        kind = scaling.get("rope_type", scaling.get("type", "default"))
        if kind not in ("default", "yarn") or (kind == "yarn" and scaling.get("factor") is None):
            c.refuse("rope_scaling", "V4 scales its compressed layers with yarn, given a factor")
    for name in (
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "head_dim",
        "q_lora_rank",
        "sliding_window",
        "o_groups",
        "o_lora_rank",
        "index_n_heads",
        "index_head_dim",
        "index_topk",
        "n_routed_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
    ):
        c.need(name)
    if int(c.need("num_experts_per_tok")) > int(c.need("n_routed_experts")):
        c.refuse("num_experts_per_tok", "more experts per token than experts")
    heads, d, groups = (int(c.need(n)) for n in ("num_attention_heads", "head_dim", "o_groups"))
    if (heads * d) % groups:
        c.refuse("o_groups", f"{heads} heads of {d} do not split into equal groups")
    return c


@dataclass(frozen=True)
class LayerSpec:
    kind: str  # "sliding", "csa" or "hca"
    ratio: int  # positions per compressed row; 0 when sliding
    freq: torch.Tensor  # the rotated pairs' inverse frequencies, float64
    hash_routed: bool


def frequencies(
    rope: int, theta: float, yarn: dict[str, Any] | None = None, max_position: int = 1_048_576
) -> torch.Tensor:
    """RoPE's inverse frequencies for `rope` rotated features, float64; with `yarn` (a
    rope_scaling of type yarn) those of HF's `_compute_yarn_parameters` (correction range rounded
    outwards), as the engine's kernels/rope.ts; V4 forces the attention factor to 1, so cos and
    sin are not scaled."""
    freq = 1.0 / theta ** (torch.arange(0, rope, 2, dtype=torch.float64) / rope)
    if yarn is None:
        return freq
    factor = float(yarn["factor"])
    original = float(yarn.get("original_max_position_embeddings") or max_position)

    def correction(rotations: float) -> float:
        return rope * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    fast, slow = (yarn.get(k) for k in ("beta_fast", "beta_slow"))
    low = max(math.floor(correction(32.0 if fast is None else float(fast))), 0)
    high = min(math.ceil(correction(1.0 if slow is None else float(slow))), rope - 1)
    span = high - low if high != low else 0.001
    ramp = ((torch.arange(rope // 2, dtype=torch.float64) - low) / span).clamp(0, 1)
    return freq / factor * ramp + freq * (1 - ramp)


def rope_dim(c: Config) -> int:
    """The rotated features: `qk_rope_head_dim`, else head_dim x `partial_rotary_factor`."""
    d = int(c.need("head_dim"))
    rope = c.get("qk_rope_head_dim")
    if rope is None:
        rope = round(d * float(c.get("partial_rotary_factor", 64 / 512)))
    if int(rope) % 2 or int(rope) > d:
        c.refuse("qk_rope_head_dim", f"even and at most head_dim {d}")
    return int(rope)


def layer_specs(c: Config) -> list[LayerSpec]:
    """Each layer's attention kind, ratio, RoPE and routing, as parseV4Config reads them."""
    layers = int(c.need("num_hidden_layers"))
    rates = c.get("compress_rates") or {}
    csa = int(rates.get("compressed_sparse_attention") or c.get("compress_rate_csa", 4))
    hca = int(rates.get("heavily_compressed_attention") or c.get("compress_rate_hca", 128))
    if c.get("layer_types") is not None:
        types = list(c.need("layer_types"))
        if len(types) < layers or any(t not in KINDS for t in types):
            c.refuse("layer_types", "one of V4's three attention kinds for every layer")
        kinds = [KINDS[t] for t in types[:layers]]
    elif c.get("compress_ratios") is not None:
        ratios = list(c.need("compress_ratios"))
        by_ratio = {csa: "csa", hca: "hca"}
        if len(ratios) < layers or any(r > 1 and r not in by_ratio for r in ratios[:layers]):
            c.refuse("compress_ratios", f"0 or 1 (sliding), {csa} or {hca} for every layer")
        kinds = ["sliding" if r <= 1 else by_ratio[r] for r in ratios[:layers]]
    else:
        kinds = ["hca" if i < 2 or i % 2 == 0 else "csa" for i in range(layers)]
    if c.get("mlp_layer_types") is not None:
        mlp = list(c.need("mlp_layer_types"))
        if len(mlp) < layers:
            c.refuse("mlp_layer_types", "an entry for every layer")
        hashed = [t == "hash_moe" for t in mlp[:layers]]
    else:
        hashed = [i < int(c.get("num_hash_layers", 3)) for i in range(layers)]
    rope = rope_dim(c)
    sliding = frequencies(rope, float(c.get("rope_theta", 10_000)))
    # YaRN scales the compressed layers only (HF's "compress" rope parameters).
    scaling = c.get("rope_scaling")
    yarn = scaling if scaling and scaling.get("rope_type", scaling.get("type")) == "yarn" else None
    compressed = frequencies(
        rope,
        float(c.get("compress_rope_theta", 160_000)),
        yarn,
        int(c.get("max_position_embeddings", 1_048_576)),
    )
    return [
        LayerSpec(
            k,
            {"sliding": 0, "csa": csa, "hca": hca}[k],
            sliding if k == "sliding" else compressed,
            h,
        )
        for k, h in zip(kinds, hashed, strict=True)
    ]


def rotate(
    x: torch.Tensor, positions: torch.Tensor, freq: torch.Tensor, inverse: bool = False
) -> torch.Tensor:
    """RoPE on x [T, ..., r] at `positions` [T] with inverse frequencies `freq` [r/2], features
    (2i, 2i+1) paired (DeepSeek's complex form, the engine's rotateAdjacentPairs); `inverse`
    rotates back by -position. The `rope-pairing` fault pairs i with i + r/2 instead."""
    r = x.shape[-1]
    angle = positions.to(torch.float64)[:, None] * freq
    shape = (x.shape[0],) + (1,) * (x.dim() - 2) + (r // 2,)
    cos = angle.cos().float().view(shape)
    sin = angle.sin().float().view(shape) * (-1 if inverse else 1)
    if faults.active("rope-pairing"):
        a, b = x[..., : r // 2], x[..., r // 2 :]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2)


def rotate_tail(
    x: torch.Tensor, rope: int, positions: torch.Tensor, freq: torch.Tensor
) -> torch.Tensor:
    """x with its trailing `rope` features rotated at `positions`."""
    return torch.cat([x[..., :-rope], rotate(x[..., -rope:], positions, freq)], -1)


def _previous(windows: torch.Tensor, fill: float) -> torch.Tensor:
    """[n, ratio, f] -> each window's predecessor (window 0's filled with `fill`)."""
    return torch.cat([torch.full_like(windows[:1], fill), windows[:-1]])


@dataclass(frozen=True)
class Pending:
    """A compressor's projections (values c, gate logits z) of positions start.. that rows still
    to close will read: the open window, and with overlap the whole one before it."""

    c: torch.Tensor
    z: torch.Tensor
    start: int


@dataclass(frozen=True)
class AttentionCache:
    """One layer's state for one sequence after `length` positions: the window's rotated keys
    (K = V), the compressed rows so far and their compressor's pending projections, and the
    indexer's keys and pending projections (compressed sparse layers)."""

    length: int
    keys: torch.Tensor
    rows: torch.Tensor | None = None
    pending: Pending | None = None
    index_rows: torch.Tensor | None = None
    index_pending: Pending | None = None


class V4Reference:
    """The DeepSeek-V4 stack as plain-PyTorch blocks over a checkpoint's tensors (float32)."""

    def __init__(self, c: Config, weights: dict[str, torch.Tensor]) -> None:
        self.c = checked(c)
        self.w = weights
        self.specs = layer_specs(c)
        self.eps = float(c.get("rms_norm_eps", 1e-6))
        self.hidden = int(c.need("hidden_size"))
        self.heads, self.head_dim = int(c.need("num_attention_heads")), int(c.need("head_dim"))
        self.rope = rope_dim(c)
        self.window = int(c.need("sliding_window"))
        self.groups, self.group_rank = int(c.need("o_groups")), int(c.need("o_lora_rank"))
        self.index_heads, self.index_dim = (
            int(c.need("index_n_heads")),
            int(c.need("index_head_dim")),
        )
        if self.rope > self.index_dim:
            c.refuse("index_head_dim", f"narrower than the rotated part ({self.rope})")
        self.index_topk = int(c.need("index_topk"))
        self.top_k, self.experts = (
            int(c.need("num_experts_per_tok")),
            int(c.need("n_routed_experts")),
        )
        self.inner = int(c.need("moe_intermediate_size"))
        self.norm_topk = bool(c.get("norm_topk_prob", True))
        self.route_scale = float(c.get("routed_scaling_factor", 1.5))
        self.limit = float(c.get("swiglu_limit", 10.0))
        self.mhc = MhcConfig(
            int(c.get("hc_mult", 4)),
            int(c.get("hc_sinkhorn_iters", 20)),
            float(c.get("hc_eps", 1e-6)),
            self.eps,
        )
        self.num_layers = len(self.specs)

    @classmethod
    def from_checkpoint(
        cls, config: dict[str, Any], tensors: Iterable[tuple[str, torch.Tensor]]
    ) -> "V4Reference":
        """The checkpoint's tensors as stored (MXFP4 experts as u8 blocks and scales): MXFP4
        decoded, floating tensors as float32, the hash tables kept as integers."""
        weights = {
            name: t if not t.is_floating_point() else t.float() for name, t in decoded(tensors)
        }
        return cls(Config(config, FAMILY), weights)

    # The embedding and the head.

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Token ids to the residual streams [T, n * hidden], each a copy of the embedding."""
        return self.w["model.embed_tokens.weight"][ids].repeat(1, self.mhc.streams)

    def head(self, streams: torch.Tensor) -> torch.Tensor:
        collapse = HyperHead(self.mhc, self.hidden)
        collapse.load_state_dict(self._under("model.hc_head."))
        hidden = rms_norm(collapse(streams), self.w["model.norm.weight"], self.eps)
        tied = self.c.get("tie_word_embeddings", False)
        return hidden @ self.w["model.embed_tokens.weight" if tied else "lm_head.weight"].t()

    # The blocks the check runs, each behind its mHC site.

    def mixer_block(self, layer: int) -> Callable[[torch.Tensor], torch.Tensor]:
        """Layer `layer`'s mixer over a whole sequence at once (from an empty cache)."""
        p = f"model.layers.{layer}"
        return self._site(
            f"{p}.attn_hc", f"{p}.input_layernorm.weight", lambda x: self.attention(layer, x)[0]
        )

    def mixer_in_steps(self, layer: int, prefill: int) -> Callable[[torch.Tensor], torch.Tensor]:
        """Layer `layer`'s mixer as the engine ran it: the first `prefill` rows at once, then each
        later row alone, attending through the cache the rows before it left."""
        p = f"model.layers.{layer}"
        connection, norm = self._connection(f"{p}.attn_hc"), self.w[f"{p}.input_layernorm.weight"]

        def block(streams: torch.Tensor) -> torch.Tensor:
            cache: AttentionCache | None = None

            def attend(h: torch.Tensor) -> torch.Tensor:
                nonlocal cache
                out, cache = self.attention(layer, h, cache)
                return out

            steps = [streams[:prefill], *streams[prefill:].split(1)]
            return torch.cat([connection(step, norm, attend) for step in steps])

        return block

    def ffn_block(self, layer: int, ids: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
        """Layer `layer`'s experts; `ids` are the rows' token ids (hash layers route by them)."""
        p = f"model.layers.{layer}"
        return self._site(
            f"{p}.ffn_hc", f"{p}.post_attention_layernorm.weight", lambda x: self.moe(layer, x, ids)
        )

    def _site(
        self, site: str, norm: str, block: Callable[[torch.Tensor], torch.Tensor]
    ) -> Callable[[torch.Tensor], torch.Tensor]:
        connection = self._connection(site)
        return lambda streams: connection(streams, self.w[norm], block)

    def _connection(self, site: str) -> HyperConnection:
        connection = HyperConnection(self.mhc, self.hidden)
        connection.load_state_dict(self._under(f"{site}."))
        return connection

    def _under(self, prefix: str) -> dict[str, torch.Tensor]:
        return {k[len(prefix) :]: v for k, v in self.w.items() if k.startswith(prefix)}

    # Attention.

    def attention(
        self, layer: int, x: torch.Tensor, cache: "AttentionCache | None" = None
    ) -> tuple[torch.Tensor, "AttentionCache"]:
        """One sequence's attention over x [T, hidden] (the normed block input): its rows are
        positions cache.length onward (0 without a cache: the whole sequence at once). Returns the
        output and the cache after them: the window's keys, the compressed rows, and the
        projections of positions whose rows are still open."""
        spec = self.specs[layer]
        p = f"model.layers.{layer}.self_attn"
        w = self.w
        T, nh, d, r = x.shape[0], self.heads, self.head_dim, self.rope
        start = cache.length if cache else 0
        pos = torch.arange(start, start + T)
        latent = rms_norm(x @ w[f"{p}.q_a_proj.weight"].t(), w[f"{p}.q_a_norm.weight"], self.eps)
        q = rms_norm((latent @ w[f"{p}.q_b_proj.weight"].t()).view(T, nh, d), None, self.eps)
        q = rotate_tail(q, r, pos, spec.freq)
        kv = rms_norm(x @ w[f"{p}.kv_proj.weight"].t(), w[f"{p}.kv_norm.weight"], self.eps)
        kv = rotate_tail(kv, r, pos, spec.freq)
        keys = torch.cat([cache.keys, kv]) if cache else kv
        key_pos = torch.arange(start + T - keys.shape[0], start + T)
        # Which keys each query reads: its window, then (compressed layers) closed rows.
        mask = (key_pos[None, :] <= pos[:, None]) & (key_pos[None, :] > pos[:, None] - self.window)
        after = AttentionCache(start + T, keys[-self.window :])
        if spec.kind != "sliding":
            rows, pending = self.compress(
                f"{p}.compressor",
                x,
                d,
                spec,
                spec.kind == "csa",
                cache.pending if cache else None,
                start,
            )
            rows = torch.cat([cache.rows, rows]) if cache and cache.rows is not None else rows
            closed = torch.arange(rows.shape[0])[None, :] < ((pos + 1) // spec.ratio)[:, None]
            after = AttentionCache(start + T, after.keys, rows, pending)
            if spec.kind == "csa":
                chosen, index = self.indexer_choice(p, x, latent, spec, pos, closed, cache)
                closed = closed & chosen
                after = AttentionCache(start + T, after.keys, rows, pending, *index)
            keys, mask = torch.cat([keys, rows]), torch.cat([mask, closed], 1)
        logits = torch.einsum("thd,kd->htk", q.double(), keys.double()) / math.sqrt(d)
        logits = logits.masked_fill(~mask, -math.inf)
        sinks = w[f"{p}.sinks"].double().view(nh, 1, 1).expand(nh, T, 1)
        probs = torch.cat([logits, sinks], -1).softmax(-1)[..., :-1]
        out = torch.einsum("htk,kd->thd", probs, keys.double()).float()
        out = torch.cat([out[..., :-r], rotate(out[..., -r:], pos, spec.freq, inverse=True)], -1)
        # The grouped output projection: each group of heads through its o_a_proj rows.
        g, rank = self.groups, self.group_rank
        o_a = w[f"{p}.o_a_proj.weight"].view(g, rank, -1)
        mid = torch.einsum("tgp,grp->tgr", out.reshape(T, g, -1), o_a).reshape(T, g * rank)
        return mid @ w[f"{p}.o_b_proj.weight"].t(), after

    def compress(
        self,
        p: str,
        x: torch.Tensor,
        width: int,
        spec: LayerSpec,
        overlap: bool,
        pending: "Pending | None",
        start: int,
    ) -> tuple[torch.Tensor, "Pending"]:
        """The compressor over rows x at positions start.. (`pending`: the earlier positions'
        projections it still needs). Returns the rows whose windows close among them and what
        the next rows need: per feature, a softmax over a row's slots of gate logits +
        position_bias weighting the projected values, RMS-normed, rotated at w * ratio. With
        `overlap`, row w pools window w-1's first half-series and window w's second."""
        w, ratio = self.w, spec.ratio
        c = x @ w[f"{p}.kv_proj.weight"].t()
        z = x @ w[f"{p}.gate_proj.weight"].t()
        first = 0
        if pending is not None:
            c, z, first = torch.cat([pending.c, c]), torch.cat([pending.z, z]), pending.start
        end = start + x.shape[0]
        before, closed = start // ratio, end // ratio
        # Windows first // ratio .. closed - 1 are whole here; with overlap the first of them is
        # there only as the next one's earlier window (its own row was made before).
        windows = closed - first // ratio
        series = c.shape[-1]
        cw = c[: windows * ratio].view(windows, ratio, series)
        zw = z[: windows * ratio].view(windows, ratio, series) + w[f"{p}.position_bias"]
        if overlap:
            # Row 0 has no earlier window: its first half's slots weigh nothing.
            zw = torch.cat([_previous(zw[..., :width], -math.inf), zw[..., width:]], 1)
            cw = torch.cat([_previous(cw[..., :width], 0.0), cw[..., width:]], 1)
        pooled = (zw.double().softmax(1) * cw.double()).sum(1).float()
        rows = rms_norm(pooled, w[f"{p}.kv_norm.weight"], self.eps)
        rows = rotate_tail(rows, self.rope, torch.arange(first // ratio, closed) * ratio, spec.freq)
        keep = max(0, closed - 1 if overlap else closed) * ratio
        later = Pending(c[keep - first :], z[keep - first :], keep)
        return rows[before - first // ratio :], later

    def indexer_choice(
        self,
        p: str,
        x: torch.Tensor,
        latent: torch.Tensor,
        spec: LayerSpec,
        pos: torch.Tensor,
        closed: torch.Tensor,
        cache: "AttentionCache | None",
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, "Pending"]]:
        """[T, rows]: the compressed rows the lightning indexer picks for each query at `pos`, the
        top-k scores sum_h w_h relu(q_h . k_s) / sqrt(d) among the `closed` rows (all of them
        when at most top-k; a tie goes to the earlier row); and its keys and pending projections
        for the cache."""
        ix = f"{p}.compressor.indexer"
        T, nh, d = x.shape[0], self.index_heads, self.index_dim
        earlier = cache.index_pending if cache else None
        keys, pending = self.compress(ix, x, d, spec, True, earlier, int(pos[0]))
        if cache is not None and cache.index_rows is not None:
            keys = torch.cat([cache.index_rows, keys])
        q = (latent @ self.w[f"{ix}.q_b_proj.weight"].t()).view(T, nh, d)
        q = rotate_tail(q, self.rope, pos, spec.freq)
        weight = (x @ self.w[f"{ix}.weights_proj.weight"].t()).double() / math.sqrt(nh)
        dots = torch.einsum("thd,sd->ths", q.double(), keys.double()).clamp(min=0) / math.sqrt(d)
        scores = torch.einsum("th,ths->ts", weight, dots).masked_fill(~closed, -math.inf)
        k = min(self.index_topk, keys.shape[0])
        # A stable descending sort keeps the earlier of two equal scores first.
        order = scores.argsort(dim=-1, descending=True, stable=True)[:, :k]
        return torch.zeros_like(closed).scatter(1, order, True) & closed, (keys, pending)

    # Mixture of experts.

    def moe(self, layer: int, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Routed experts (sqrt-softplus scores; top-k or hash-routed) plus the shared expert.
        Every expert runs on every row (static shapes), weighted by zero where not chosen."""
        spec = self.specs[layer]
        p = f"model.layers.{layer}.mlp"
        w = self.w
        logits = x.double() @ w[f"{p}.gate.weight"].double().t()
        scores = torch.logaddexp(logits, torch.zeros_like(logits)).sqrt()  # sqrt(softplus)
        if spec.hash_routed:
            chosen = w[f"{p}.gate.tid2eid"].long()[ids]
        else:
            corrected = scores + w[f"{p}.gate.e_score_correction_bias"].double()
            chosen = corrected.topk(self.top_k, -1).indices
        picked = scores.gather(1, chosen)
        if self.norm_topk:
            picked = picked / picked.sum(-1, keepdim=True)
        mix = torch.zeros_like(scores).scatter(1, chosen, picked * self.route_scale).float()
        gate_up, down = w[f"{p}.experts.gate_up_proj"], w[f"{p}.experts.down_proj"]
        inner, limit = self.inner, self.limit
        s = f"{p}.shared_experts"
        shared = F.silu(x @ w[f"{s}.gate_proj.weight"].t()) * (x @ w[f"{s}.up_proj.weight"].t())
        out = shared @ w[f"{s}.down_proj.weight"].t()
        for e in range(self.experts):
            gu = x @ gate_up[e].t()
            act = F.silu(gu[:, :inner].clamp(max=limit)) * gu[:, inner:].clamp(-limit, limit)
            out = out + mix[:, e : e + 1] * (act @ down[e].t())
        return out
