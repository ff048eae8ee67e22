"""The decoder layer of the demo in float64 NumPy, written without libaiter:
what the demo checks libaiter's result against.  KV history is kept per
sequence as plain arrays (no paging), so paging bugs cannot cancel out."""
import numpy as np


def rmsnorm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope_neox(x, positions, base):
    """x [T, H, D]; rotate the two halves of the head dim by position * base^(-2i/D)."""
    d = x.shape[-1]
    inv_freq = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    angle = positions[:, None].astype(np.float64) * inv_freq[None, :]
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def causal_attention(q, k, v, scale):
    """q [Lq, Hq, D] are the last Lq positions of k, v [Lk, Hkv, D]; GQA by head groups."""
    lq, hq, _ = q.shape
    lk, hkv, _ = k.shape
    group = hq // hkv
    out = np.empty_like(q)
    for h in range(hq):
        s = q[:, h, :] @ k[:, h // group, :].T * scale  # [Lq, Lk]
        visible = np.arange(lk)[None, :] <= (np.arange(lq)[:, None] + lk - lq)
        s = np.where(visible, s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        out[:, h, :] = (p / p.sum(-1, keepdims=True)) @ v[:, h // group, :]
    return out


class ReferenceLayer:
    def __init__(self, weights, config):
        self.w = {name: np.asarray(value, dtype=np.float64) for name, value in weights.items()}
        self.c = config
        self.k_history = {}
        self.v_history = {}

    def forward(self, seq, x, positions):
        """x [L, hidden] new tokens of sequence `seq` at `positions`; returns the layer output."""
        c, w = self.c, self.w
        hq, hkv, d = c["heads"], c["kv_heads"], c["head_dim"]
        h = rmsnorm(x, w["ln1"], c["eps"])
        qkv = (h @ w["qkv"].T).reshape(len(x), hq + 2 * hkv, d)
        q = rope_neox(qkv[:, :hq], positions, c["rope_base"])
        k = rope_neox(qkv[:, hq:hq + hkv], positions, c["rope_base"])
        v = qkv[:, hq + hkv:]
        self.k_history[seq] = np.concatenate([self.k_history.get(seq, k[:0]), k])
        self.v_history[seq] = np.concatenate([self.v_history.get(seq, v[:0]), v])
        attn = causal_attention(q, self.k_history[seq], self.v_history[seq], 1.0 / np.sqrt(d))
        resid = x + attn.reshape(len(x), hq * d) @ w["o"].T
        h2 = rmsnorm(resid, w["ln2"], c["eps"])
        gate_up = h2 @ w["gate_up"].T
        i = c["intermediate"]
        gate, up = gate_up[:, :i], gate_up[:, i:]
        return resid + (gate / (1.0 + np.exp(-gate)) * up) @ w["down"].T
