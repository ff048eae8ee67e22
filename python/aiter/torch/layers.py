"""nn.Module layers over torch.ops.aiter, for swapping into existing models."""
import torch

ops = torch.ops.aiter


class AiterRMSNorm(torch.nn.Module):
    """RMSNorm by ``torch.ops.aiter.rmsnorm`` (fp32 inside, rounded once), sharing
    the replaced module's weight."""

    def __init__(self, weight, eps):
        super().__init__()
        self.weight, self.eps = weight, float(eps)

    def forward(self, x):
        return ops.rmsnorm(x, self.weight, self.eps)


class AiterLinear(torch.nn.Module):
    """nn.Linear by ``torch.ops.aiter.gemm_a16w16`` (fp32 accumulation), sharing
    the replaced module's weight and bias."""

    def __init__(self, linear):
        super().__init__()
        self.weight, self.bias = linear.weight, linear.bias
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x):
        y = ops.gemm_a16w16(x.reshape(-1, self.in_features), self.weight, self.bias)
        return y.reshape(tuple(x.shape[:-1]) + (self.out_features,))


_GATED = {"silu": ("silu", None), "gelu": ("gelu", "none"), "gelu_pytorch_tanh": ("gelu", "tanh")}


class AiterGatedMLP(torch.nn.Module):
    """``down(act(gate(x)) * up(x))`` with gate and up in one GEMM (their weights
    concatenated once) and the activation fused with the product
    (``silu_and_mul`` / ``gelu_and_mul``)."""

    def __init__(self, gate, up, down, hidden_act):
        super().__init__()
        if hidden_act not in _GATED or gate.bias is not None or up.bias is not None:
            raise ValueError(f"AiterGatedMLP: hidden_act {hidden_act!r} with biases={gate.bias is not None} is not "
                             f"supported (expected one of {', '.join(_GATED)}, no gate/up bias)")
        with torch.no_grad():
            fused = torch.cat([gate.weight, up.weight], dim=0)
        self.gate_up = torch.nn.Parameter(fused, requires_grad=False)
        self.down = AiterLinear(down)
        self.activation, self.approximate = _GATED[hidden_act]

    def forward(self, x):
        rows = x.reshape(-1, x.shape[-1])
        gate_up = ops.gemm_a16w16(rows, self.gate_up)
        act = ops.silu_and_mul(gate_up) if self.activation == "silu" else ops.gelu_and_mul(gate_up, self.approximate)
        y = self.down(act)
        return y.reshape(tuple(x.shape[:-1]) + (y.shape[-1],))
