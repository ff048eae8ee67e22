"""Element types by name, and their DLPack (code, bits) pairs.

Names follow NumPy / PyTorch spelling: "float32", "bfloat16", "float8_e4m3fn"...
"""

# name -> (DLDataTypeCode, bits)
DLPACK = {
    "float32": (2, 32),
    "float64": (2, 64),
    "float16": (2, 16),
    "bfloat16": (4, 16),
    "int8": (0, 8),
    "uint8": (1, 8),
    "int32": (0, 32),
    "int64": (0, 64),
    "float8_e4m3fn": (10, 8),
    "float8_e4m3fnuz": (11, 8),
    "float8_e5m2": (12, 8),
}
NAME_OF = {v: k for k, v in DLPACK.items()}
ITEMSIZE = {name: bits // 8 for name, (_, bits) in DLPACK.items()}

FLOAT_TYPES = ("float32", "float16", "bfloat16")
FP8_TYPES = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2")


def canonical(dtype):
    """The libaiter name of a dtype given as a name or a NumPy / PyTorch / JAX dtype."""
    if isinstance(dtype, str):
        name = dtype
    elif isinstance(dtype, type):  # a scalar type: np.float16, ml_dtypes.bfloat16, jnp.float8_e4m3fn
        import numpy as np
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = dtype.__name__
    else:
        name = str(getattr(dtype, "name", None) or dtype)
        name = name.replace("torch.", "")
    aliases = {"float": "float32", "half": "float16", "bf16": "bfloat16", "fp16": "float16",
               "fp32": "float32", "int": "int32"}
    name = aliases.get(name, name)
    if name not in DLPACK:
        from .errors import UnsupportedDtypeError
        raise UnsupportedDtypeError(f"dtype: expected one of {', '.join(DLPACK)}, got {dtype!r}")
    return name
