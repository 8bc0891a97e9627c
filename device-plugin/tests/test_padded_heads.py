import torch

from bringup_vllm.padded_heads import pad_heads, unpad_heads


def attention(q, k, v, heads, kv_heads, size, v_size, scale):
    """Causal grouped-query attention over [tokens, heads * size] rows, in plain float64."""
    t = q.shape[0]
    q = q.view(t, heads, size).transpose(0, 1)
    k = k.view(t, kv_heads, size).transpose(0, 1).repeat_interleave(heads // kv_heads, 0)
    v = v.view(t, kv_heads, v_size).transpose(0, 1).repeat_interleave(heads // kv_heads, 0)
    scores = q @ k.transpose(1, 2) * scale
    scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    return (scores.softmax(-1) @ v).transpose(0, 1).reshape(t, heads * v_size)


def test_zero_padded_heads_give_the_same_attention():
    torch.manual_seed(0)
    tokens, heads, kv_heads, size, v_size, served = 7, 4, 2, 24, 16, 32
    q = torch.randn(tokens, heads * size, dtype=torch.float64)
    k = torch.randn(tokens, kv_heads * size, dtype=torch.float64)
    v = torch.randn(tokens, kv_heads * v_size, dtype=torch.float64)
    want = attention(q, k, v, heads, kv_heads, size, v_size, size**-0.5)
    padded = attention(
        pad_heads(q, heads, size, served),
        pad_heads(k, kv_heads, size, served),
        pad_heads(v, kv_heads, v_size, served),
        heads,
        kv_heads,
        served,
        served,
        size**-0.5,
    )
    got = unpad_heads(padded, heads, v_size, served)
    assert torch.allclose(got, want, rtol=0, atol=1e-12)


def test_padding_keeps_each_head_in_place():
    x = torch.arange(6.0).view(1, 6)  # two heads of three
    padded = pad_heads(x, 2, 3, 4)
    assert padded.tolist() == [[0, 1, 2, 0, 3, 4, 5, 0]]
    assert unpad_heads(padded, 2, 3, 4).tolist() == x.tolist()
