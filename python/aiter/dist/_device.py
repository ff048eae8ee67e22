"""The DLPack device (type, id) of a device named the ways callers name one."""
from .._frameworks import KDL_CUDA, KDL_ROCM


def _torch_is_rocm():
    try:
        import torch
    except ImportError:
        return False
    return getattr(torch.version, "hip", None) is not None


def dl_device(device):
    """``device``: an int (a GPU of this process's vendor), a ``torch.device``,
    a ``"cuda:N"`` string, or a ``(device_type, id)`` pair."""
    if isinstance(device, tuple):
        return int(device[0]), int(device[1])
    gpu_type = KDL_ROCM if _torch_is_rocm() else KDL_CUDA
    if isinstance(device, int):
        return gpu_type, device
    text = str(device)
    kind, _, index = text.partition(":")
    if kind not in ("cuda", "hip", "rocm"):
        raise ValueError(f"device: expected a GPU ('cuda:N', an int or a torch.device), got {device!r}")
    if not index:
        import torch
        index = torch.cuda.current_device()
    return gpu_type, int(index)
