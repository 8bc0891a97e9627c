"""Manifold-constrained hyper-connections (mHC, DeepSeek-V4) in plain PyTorch.

The residual is n = hc_mult parallel streams [T, n * hidden]. Each sub-layer reads a weighted sum
of them and writes back a Sinkhorn-normalized mix of them plus its output; the hyper head collapses
them before the final norm. Followed: transformers' `models/deepseek_v4/modeling_deepseek_v4.py`
(DeepseekV4HyperConnection, DeepseekV4HyperHead), as bringup's engine does
(src/engine/blocks/residual/mhc.ts), with its tensor names (`attn_hc.{fn,base,scale}`,
`ffn_hc.*`, `model.hc_head.hc_{fn,base,scale}`). For one token with streams X [n, H]:

    x = flatten(X) / rms(flatten(X));  mix = fn x
    pre_i = sigmoid(mix_i scale_0 + base_i) + hc_eps;  post_i = 2 sigmoid(mix_{n+i} scale_1 + ...)
    comb = sinkhorn(mix_{2n..} scale_2 + base_{2n..})    [n, n]
    block input = sum_i pre_i X_i;  new X_k = post_k out + sum_j comb[j, k] X_j
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from bringup_vllm.norm import rms_norm


@dataclass(frozen=True)
class MhcConfig:
    streams: int
    sinkhorn_iters: int
    hc_eps: float
    norm_eps: float


def sinkhorn(logits: torch.Tensor, iters: int, eps: float) -> torch.Tensor:
    """[T, n, n] onto doubly stochastic matrices as the source does: a row softmax + eps, then
    columns / (sum + eps), then iters - 1 rounds of rows then columns."""
    m = logits.softmax(-1) + eps
    m = m / (m.sum(-2, keepdim=True) + eps)
    for _ in range(iters - 1):
        m = m / (m.sum(-1, keepdim=True) + eps)
        m = m / (m.sum(-2, keepdim=True) + eps)
    return m


class HyperConnection(nn.Module):
    """One sub-layer's site: parameters fn [(2+n)n, nH], base [(2+n)n], scale [3]."""

    def __init__(self, config: MhcConfig, hidden: int) -> None:
        super().__init__()
        n = config.streams
        self.config = config
        self.fn = nn.Parameter(torch.zeros((2 + n) * n, n * hidden))
        self.base = nn.Parameter(torch.zeros((2 + n) * n))
        self.scale = nn.Parameter(torch.ones(3))

    def forward(
        self,
        streams: torch.Tensor,
        norm: torch.Tensor,
        block: Callable[[torch.Tensor], torch.Tensor],
    ) -> torch.Tensor:
        """streams [T, n*H] -> block(RMSNorm(sum_i pre_i X_i) * norm) mixed back in, [T, n*H]."""
        c = self.config
        n, T = c.streams, streams.shape[0]
        X = streams.view(T, n, -1)
        mix = rms_norm(streams, None, c.norm_eps) @ self.fn.t()
        scale = self.scale
        pre = (mix[:, :n] * scale[0] + self.base[:n]).sigmoid() + c.hc_eps
        post = 2 * (mix[:, n : 2 * n] * scale[1] + self.base[n : 2 * n]).sigmoid()
        comb_logits = (mix[:, 2 * n :] * scale[2] + self.base[2 * n :]).view(T, n, n)
        comb = sinkhorn(comb_logits, c.sinkhorn_iters, c.hc_eps)
        h = rms_norm(torch.einsum("tn,tnh->th", pre, X), norm, c.norm_eps)
        out = block(h)
        mixed = torch.einsum("tjk,tjh->tkh", comb, X)
        return (post.unsqueeze(-1) * out.unsqueeze(1) + mixed).reshape(T, -1)


class HyperHead(nn.Module):
    """The collapse before the final norm: hc_fn [n, nH], hc_base [n], hc_scale [1]."""

    def __init__(self, config: MhcConfig, hidden: int) -> None:
        super().__init__()
        n = config.streams
        self.config = config
        self.hc_fn = nn.Parameter(torch.zeros(n, n * hidden))
        self.hc_base = nn.Parameter(torch.zeros(n))
        self.hc_scale = nn.Parameter(torch.ones(1))

    def forward(self, streams: torch.Tensor) -> torch.Tensor:
        c = self.config
        T = streams.shape[0]
        mix = rms_norm(streams, None, c.norm_eps) @ self.hc_fn.t()
        pre = (mix * self.hc_scale[0] + self.hc_base).sigmoid() + c.hc_eps
        return torch.einsum("tn,tnh->th", pre, streams.view(T, c.streams, -1))
