"""Kimi Delta Attention (KDA) in plain PyTorch: static shapes, no Triton, no FLA kernels.

vLLM runs KDA (vllm/model_executor/layers/kda.py, for Kimi Linear) on FLA's Triton kernels, which
neither its CPU backend nor vllm-gaudi has. This is the same layer written out, following what
bringup's engine computes (src/engine/blocks/linear-attention/): fla's `fla/ops/kda/naive.py`
(`naive_recurrent_kda`, `naive_chunk_kda`), `fla/ops/kda/gate.py` (`naive_kda_gate`) and
`fla/modules/l2norm.py`, with Kimi Linear's tensor names (`q/k/v_proj`, `q/k/v_conv1d`,
`f_a_proj`, `f_b_proj`, `b_proj`, `g_a_proj`, `g_b_proj`, `A_log`, `dt_bias`, `o_norm`, `o_proj`).

Per head, with state S [dk, dv] and a per-channel log-decay g <= 0:
    S <- diag(exp(g)) S;  S <- S + k (beta (v - k^T S))^T;  o = q^T S
The chunked form (WY / UT transform) computes the same over chunks of 64 tokens.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from bringup_vllm import faults
from bringup_vllm.norm import Norm

# fla's l2norm epsilon, inside the square root.
L2_NORM_EPS = 1e-6
# vLLM builds KDA's output norm without the config's rms_norm_eps (its default 1e-5).
O_NORM_EPS = 1e-5
# fla's chunk size, the engine's KDA_CHUNK.
CHUNK = 64


@dataclass
class KdaState:
    """One sequence's state: S per head [H, dk, dv] and each short convolution's tail [C, K-1]."""

    recurrent: torch.Tensor
    tails: list[torch.Tensor]


def l2_normalize(x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """x / sqrt(sum x^2 + 1e-6) * scale over the last axis."""
    return x * (scale / torch.sqrt((x * x).sum(-1, keepdim=True) + L2_NORM_EPS))


def short_conv(x: torch.Tensor, weight: torch.Tensor, tail: torch.Tensor) -> torch.Tensor:
    """Causal depthwise convolution, then SiLU: x [T, C], weight [C, 1, K], tail [C, K-1] (oldest
    first)."""
    stream = torch.cat([tail, x.t()], dim=1).unsqueeze(0)  # [1, C, K-1+T]
    return F.silu(F.conv1d(stream, weight, groups=weight.shape[0])[0].t())


def recurrent(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    state: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token by token: q, k, g [T, H, dk], v [T, H, dv], beta [T, H], state [H, dk, dv]."""
    out = torch.empty_like(v)
    s = state
    for t in range(q.shape[0]):
        s = s * g[t].exp().unsqueeze(-1)
        predicted = torch.einsum("hk,hkv->hv", k[t], s)
        s = s + k[t].unsqueeze(-1) * (beta[t].unsqueeze(-1) * (v[t] - predicted)).unsqueeze(-2)
        out[t] = torch.einsum("hk,hkv->hv", q[t], s)
    return out, s


def chunked(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    state: torch.Tensor,
    chunk: int = CHUNK,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The WY form over chunks of `chunk` tokens (fla's naive_chunk_kda); layouts as recurrent's."""
    out = torch.empty_like(v)
    s = state
    for t0 in range(0, q.shape[0], chunk):
        end = min(t0 + chunk, q.shape[0])
        # Per head: [H, L, d].
        qc, kc, vc = (x[t0:end].transpose(0, 1) for x in (q, k, v))
        gamma = g[t0:end].transpose(0, 1).cumsum(1)
        bc = beta[t0:end].t()  # [H, L]
        n = end - t0
        lower = torch.ones(n, n, dtype=torch.bool).tril()
        # D[h, c, s, d] = exp(gamma_c - gamma_s) for s <= c (masked before exp: it grows above).
        diff = (gamma.unsqueeze(2) - gamma.unsqueeze(1)).masked_fill(~lower[..., None], -torch.inf)
        decay = diff.exp()
        kk = torch.einsum("hcd,hcsd,hsd->hcs", kc, decay, kc) * bc.unsqueeze(-1)
        strict = kk.masked_fill(~lower.tril(-1), 0)
        eye = torch.eye(n).expand_as(strict)
        a = torch.linalg.solve_triangular(eye + strict, torch.diag_embed(bc), upper=False)
        w = a @ (gamma.exp() * kc)
        u = a @ vc
        aqk = torch.einsum("hcd,hcsd,hsd->hcs", qc, decay, kc)
        new_values = u - w @ s
        out[t0:end] = ((qc * gamma.exp()) @ s + aqk @ new_values).transpose(0, 1)
        last = gamma[:, -1:, :]  # [H, 1, dk]
        s = (
            s * last.transpose(1, 2).exp()
            + ((last - gamma).exp() * kc).transpose(1, 2) @ new_values
        )
    return out, s


class KdaMixer(nn.Module):
    """One KDA layer (vLLM layers/kda.py's computation, Kimi Linear's parameter names)."""

    def __init__(self, hidden: int, heads: int, head_dim: int, kernel: int) -> None:
        super().__init__()
        self.heads, self.head_dim, self.kernel = heads, head_dim, kernel
        p = heads * head_dim

        def linear(i: int, o: int) -> nn.Linear:
            return nn.Linear(i, o, bias=False)

        self.q_proj, self.k_proj, self.v_proj = (
            linear(hidden, p),
            linear(hidden, p),
            linear(hidden, p),
        )
        self.f_a_proj, self.f_b_proj = linear(hidden, head_dim), linear(head_dim, p)
        self.b_proj = linear(hidden, heads)
        self.g_a_proj, self.g_b_proj = linear(hidden, head_dim), linear(head_dim, p)
        self.o_proj = linear(p, hidden)
        self.q_conv1d = nn.Conv1d(p, p, kernel, groups=p, bias=False)
        self.k_conv1d = nn.Conv1d(p, p, kernel, groups=p, bias=False)
        self.v_conv1d = nn.Conv1d(p, p, kernel, groups=p, bias=False)
        self.A_log = nn.Parameter(torch.zeros(1, 1, heads, 1))
        self.dt_bias = nn.Parameter(torch.zeros(p))
        self.o_norm = Norm(head_dim, O_NORM_EPS)

    def fresh_state(self) -> KdaState:
        p = self.heads * self.head_dim
        return KdaState(
            torch.zeros(self.heads, self.head_dim, self.head_dim),
            [torch.zeros(p, self.kernel - 1) for _ in range(3)],
        )

    def forward(
        self, h: torch.Tensor, state: KdaState | None = None, chunk: bool = True
    ) -> tuple[torch.Tensor, KdaState]:
        """A run of one sequence's tokens h [T, hidden] from `state` (None: the sequence starts)."""
        st = state or self.fresh_state()
        T, H, d = h.shape[0], self.heads, self.head_dim
        convs = (self.q_conv1d, self.k_conv1d, self.v_conv1d)
        inputs = (self.q_proj(h), self.k_proj(h), self.v_proj(h))
        q, k, v = (
            short_conv(x, c.weight, tail)
            for x, c, tail in zip(inputs, convs, st.tails, strict=True)
        )
        # Each tail keeps the last K-1 inputs of its stream.
        tails = [
            torch.cat([t, x.t()], 1)[:, x.shape[0] :] for t, x in zip(st.tails, inputs, strict=True)
        ]
        q = l2_normalize(q.view(T, H, d), d**-0.5)
        k = l2_normalize(k.view(T, H, d))
        v = v.view(T, H, d)
        f = self.f_b_proj(self.f_a_proj(h)).view(T, H, d)
        rate = self.A_log.view(H, 1).exp()
        g = -rate * F.softplus(f + self.dt_bias.view(H, d))
        b = self.b_proj(h)
        # The deliberately wrong block: the write strength's gate with its sign flipped.
        beta = (-b if faults.active("kda-gate-sign") else b).sigmoid()
        run = chunked if chunk and T > 1 else recurrent
        o, s = run(q, k, v, g, beta, st.recurrent)
        o = self.o_norm(o)
        o = o * self.g_b_proj(self.g_a_proj(h)).view(T, H, d).sigmoid()
        return self.o_proj(o.reshape(T, H * d)), KdaState(s, tails)
