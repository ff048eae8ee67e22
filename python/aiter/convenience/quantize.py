"""``aiter.quantize``: a torch model's nn.Linear layers to a8w8 layers."""
from ..errors import InvalidArgumentError

_DTYPES = {"int8": "int8", "fp8": "float8_e4m3fn"}


def quantize(model, dtype="int8"):
    """Replaces every ``torch.nn.Linear`` of ``model`` (in place) with an
    ``aiter.torch.A8W8Linear``: the weight quantized once per output channel
    (``dtype`` "int8" or "fp8", i.e. float8_e4m3fn), the activations quantized
    per token at each call, the product by libaiter's a8w8 GEMM, the result in
    the activations' dtype.  Returns the model."""
    if dtype not in _DTYPES:
        raise InvalidArgumentError(f"aiter.quantize: dtype: expected 'int8' or 'fp8', got {dtype!r}")
    from ..torch.quantized import replace_linears
    replace_linears(model, _DTYPES[dtype])
    return model
