"""dsa.py against a direct float64 transcription of bringup's engine's indexer.

The transcription follows, line by line, src/engine/blocks/attention/dsa-indexer.ts (DsaIndexer
keys/select, layerNorm, hadamardFp8, topKPositions), src/engine/kernels/rope.ts (Rope.apply,
rotateAdjacentPairs), src/engine/kernels/indexer-scores/indexer-scores.ts (indexerScores) and
src/formats/minifloat.ts (encodeMinifloat, saturating): Python floats are JavaScript's doubles and
`f32` is Math.fround, where the engine stores into a Float32Array.
"""

import math
import struct

import pytest
import torch

from bringup_vllm.dsa import hadamard_fp8, index_scores, rotate, round_e4m3, selected


def f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def rope_tables(rope: int, theta: float, pos: int) -> tuple[list[float], list[float]]:
    half = rope // 2
    inv = [1 / theta ** ((2 * i) / rope) for i in range(half)]
    return [f32(math.cos(pos * f)) for f in inv], [f32(math.sin(pos * f)) for f in inv]


def ts_rotate(x: list[float], rope: int, theta: float, pos: int, adjacent: bool) -> list[float]:
    """Rope.apply on the leading `rope` features, or rotateAdjacentPairs (gather, apply, put)."""
    half = rope // 2
    out = list(x)
    order = [2 * i for i in range(half)] + [2 * i + 1 for i in range(half)]
    if not adjacent:
        order = list(range(rope))
    tmp = [x[j] for j in order]
    cos, sin = rope_tables(rope, theta, pos)
    for i in range(half):
        a, b = tmp[i], tmp[i + half]
        tmp[i], tmp[i + half] = f32(a * cos[i] - b * sin[i]), f32(b * cos[i] + a * sin[i])
    for slot, j in enumerate(order):
        out[j] = tmp[slot]
    return out


def ts_encode_e4m3(value: float) -> float:
    """encodeMinifloat(FP8_E4M3FN, value, {saturate: true}), decoded."""
    magnitude = abs(value)
    if magnitude == 0:
        return 0.0
    exponent = math.floor(math.log2(magnitude))
    while 2.0**exponent > magnitude:  # exponentOf, exactly
        exponent -= 1
    while 2.0 ** (exponent + 1) <= magnitude:
        exponent += 1
    quantum = 2.0 ** (max(exponent, -6) - 3)
    rounded = round(magnitude / quantum) * quantum  # Python's round is half-to-even
    rounded = min(rounded, 448.0)
    return math.copysign(rounded, value)


def ts_hadamard_fp8(row: list[float], scale_fmt: str) -> list[float]:
    d = len(row)
    x = list(row)
    length = 1
    while length < d:
        for i in range(0, d, 2 * length):
            for j in range(i, i + length):
                a, b = x[j], x[j + length]
                x[j], x[j + length] = f32(a + b), f32(a - b)
        length *= 2
    x = [f32(v * (1 / math.sqrt(d))) for v in x]
    block = min(128, d)
    for b in range(0, d, block):
        amax = max(abs(v) for v in x[b : b + block])
        if amax == 0:
            continue
        s = 2 ** math.ceil(math.log2(amax / 448)) if scale_fmt == "ue8m0" else amax / 448
        for i in range(b, b + block):
            x[i] = f32(ts_encode_e4m3(x[i] / s) * s)
    return x


def ts_scores(q: list[list[float]], weights: list[float], keys: list[list[float]]) -> list[float]:
    scores = []
    for key in keys:
        score = 0.0
        for h, head in enumerate(q):
            dot = 0.0
            for a, b in zip(head, key, strict=True):
                dot += a * b
            if dot > 0:
                score += weights[h] * dot
        scores.append(score)
    return scores


def ts_top_k(scores: list[float], k: int) -> list[int]:
    if len(scores) <= k:
        return list(range(len(scores)))
    # topKPositions: the k highest, ties to the lower position (a stable sort's order).
    ranked = sorted(range(len(scores)), key=lambda s: (-scores[s], s))
    return sorted(ranked[:k])


def floats(*shape: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator)


@pytest.mark.parametrize("adjacent", [False, True])
def test_rotation_is_the_engines_bit_for_bit(adjacent):
    tokens, heads, d, rope, theta = 7, 3, 32, 8, 10_000.0
    x = floats(tokens, heads, d, seed=1)
    positions = torch.tensor([0, 1, 5, 63, 200, 1023, 4095])
    got = rotate(x, positions, rope, theta, adjacent)
    for t in range(tokens):
        for h in range(heads):
            want = ts_rotate(x[t, h].tolist(), rope, theta, int(positions[t]), adjacent)
            assert got[t, h].tolist() == want


def test_e4m3_rounding_is_the_engines_on_ties_subnormals_and_saturation():
    values = [0.0, 1.0, 1.0625, 1.1875, -1.1875, 447.9, 448.0, 2**-7, 2**-10, 3 * 2**-10, 1e-30]
    values += floats(200, seed=2).mul(40).tolist()
    got = round_e4m3(torch.tensor(values, dtype=torch.float64)).tolist()
    assert got == [ts_encode_e4m3(v) for v in values]


@pytest.mark.parametrize("scale_fmt", ["amax", "ue8m0"])
@pytest.mark.parametrize("d", [32, 256])
def test_hadamard_fp8_is_the_engines_bit_for_bit(scale_fmt, d):
    rows = floats(5, d, seed=3) * torch.tensor([1.0, 1e-3, 30.0, 1.0, 0.0])[:, None]
    got = hadamard_fp8(rows, scale_fmt)
    for r in range(rows.shape[0]):
        assert got[r].tolist() == ts_hadamard_fp8(rows[r].tolist(), scale_fmt)


def test_scores_and_selection_are_the_engines_with_ties_to_the_earlier_position():
    length, heads, d, top_k = 40, 4, 32, 9
    keys = floats(length, d, seed=4)
    # Repeated keys score exactly alike: the earlier position must win the tie.
    keys[20:30] = keys[10:20]
    q = floats(length, heads, d, seed=5)
    weights = floats(length, heads, seed=6).double() / math.sqrt(heads * d)
    positions = torch.arange(length)
    scores = index_scores(q, weights, keys)
    chosen = selected(scores, positions, top_k)
    for t in range(length):
        want = ts_scores(q[t].tolist(), weights[t].tolist(), keys[: t + 1].tolist())
        torch.testing.assert_close(scores[t, : t + 1], torch.tensor(want, dtype=torch.float64))
        assert chosen[t].nonzero().flatten().tolist() == ts_top_k(want, top_k)


def test_when_every_score_ties_the_earliest_positions_win():
    # Zero queries: every dot is 0, so every score is exactly 0 and the top-k are the first k.
    keys = floats(12, 8, seed=7)
    scores = index_scores(torch.zeros(12, 2, 8), torch.ones(12, 2, dtype=torch.float64), keys)
    chosen = selected(scores, torch.arange(12), 3)
    assert chosen[11].nonzero().flatten().tolist() == [0, 1, 2]
    assert chosen[1].nonzero().flatten().tolist() == [0, 1]
