"""``A8W8Linear``: an nn.Linear whose weight is int8 or fp8 with one scale per
output channel, its input quantized per token at each call (``aiter.quantize``)."""
import torch

ops = torch.ops.aiter


class A8W8Linear(torch.nn.Module):
    """``y = gemm_a8w8(quant_per_token(x), w_q, x_scale, w_scale) + bias``, in ``x``'s dtype."""

    def __init__(self, linear, dtype):
        super().__init__()
        qdtype = getattr(torch, dtype)
        with torch.no_grad():
            weight = linear.weight.detach()
            w_q, w_scale = ops.quant_per_token(weight, qdtype)  # a row of W is an output channel
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.register_buffer("weight", w_q)
        self.register_buffer("weight_scale", w_scale.reshape(1, -1).contiguous())
        bias = None if linear.bias is None else linear.bias.detach().float()
        self.register_buffer("bias", bias)
        self.qdtype = qdtype

    def forward(self, x):
        rows = x.reshape(-1, self.in_features)
        x_q, x_scale = ops.quant_per_token(rows, self.qdtype)
        y = ops.gemm_a8w8(x_q, self.weight, x_scale, self.weight_scale, self.bias, x.dtype)
        return y.reshape(tuple(x.shape[:-1]) + (self.out_features,))

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, dtype={self.qdtype}"


def replace_linears(module, dtype):
    """Swaps, recursively and in place, each nn.Linear child for an A8W8Linear."""
    for name, child in module.named_children():
        if isinstance(child, torch.nn.Linear):
            setattr(module, name, A8W8Linear(child, dtype))
        else:
            replace_linears(child, dtype)
