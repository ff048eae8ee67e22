"""The few array manipulations the convenience functions need, for torch
tensors and NumPy arrays alike (the two kinds they accept)."""
import numpy as np

from ..errors import InvalidArgumentError


def is_torch(a):
    return type(a).__module__.split(".", 1)[0] == "torch"


def check_array(a, function, name):
    if not (is_torch(a) or isinstance(a, np.ndarray)):
        raise InvalidArgumentError(f"aiter.{function}: {name}: expected a torch tensor or a NumPy array, "
                                   f"got {type(a).__name__}")


def compact(a):
    """``a`` with row-major strides (a copy only where it is not already)."""
    return a.contiguous() if is_torch(a) else np.ascontiguousarray(a)


def swap_last_two(a):
    """A compact copy of ``a`` with its last two dims swapped."""
    return compact(a.transpose(-1, -2) if is_torch(a) else np.swapaxes(a, -1, -2))


def swap_dims_1_2(a):
    """[B, H, S, D] -> compact [B, S, H, D] (and back)."""
    return compact(a.transpose(1, 2) if is_torch(a) else np.swapaxes(a, 1, 2))


def arange_int32(like, count, step):
    """int32 [0, step, 2 step, ... count step] on ``like``'s device."""
    if is_torch(like):
        import torch
        return torch.arange(0, (count + 1) * step, step, dtype=torch.int32, device=like.device) if step else \
            torch.zeros(count + 1, dtype=torch.int32, device=like.device)
    return np.arange(count + 1, dtype=np.int32) * step
