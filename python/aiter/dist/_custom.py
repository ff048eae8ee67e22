"""The custom one-machine all-reduce (aiter_custom_ar of include/aiter/dist.h)."""
import sys

from .._call import Call
from .._lib import check, ffi, lib
from ..ops.quant import quantized_output, row_scales

ALGOS = {"auto": 0, "one_shot": 1, "two_shot": 2, "nccl": 3}  # aiter_ar_algo
_LIVE = {}  # handle address -> CustomAllReduce, for the torch.library op


class CustomAllReduce:
    """This rank's shared buffers for messages up to ``max_bytes`` (0: 8 MiB),
    exchanged with the peers through ``comm`` (a :class:`Communicator`; a
    collective).  Messages past ``max_bytes`` go through ``comm``'s NCCL."""

    def __init__(self, comm, max_bytes=0):
        box = ffi.new("aiter_custom_ar **")
        device = {"device_type": comm.device[0], "device_id": comm.device[1]}
        check(lib.aiter_custom_ar_create(box, comm.handle, 0, 0, device, int(max_bytes)))
        self._c, self.comm = box[0], comm
        size = ffi.new("size_t *")
        check(lib.aiter_custom_ar_max_bytes(self._c, size))
        self.max_bytes = int(size[0])
        self.address = int(ffi.cast("uintptr_t", self._c))
        _LIVE[self.address] = self
        if "torch" in sys.modules:
            _register_torch()

    @property
    def handle(self):
        if self._c is None:
            raise ValueError("the custom all-reduce is closed")
        return self._c

    def close(self):
        if getattr(self, "_c", None) is not None:
            c, self._c = self._c, None
            _LIVE.pop(self.address, None)
            check(lib.aiter_custom_ar_destroy(c))

    def all_reduce(self, x, out=None, algo="auto"):
        """The sum of ``x`` over the ranks; ``algo``: one of :data:`ALGOS`."""
        if algo not in ALGOS:
            raise ValueError(f"algo: expected one of {', '.join(ALGOS)}, got {algo!r}")
        c = Call("aiter_custom_all_reduce", like=x)
        x_ = c.input(x, "x")
        out_ = c.output(out, "out", x_.shape, x_.dtype)
        c.run(out_.c, x_.c, ALGOS[algo], self.handle)
        return c.result(out_)

    def all_reduce_add_rmsnorm(self, x, residual, weight, eps=1e-6, *, out=None, residual_out=None):
        """``residual_out = all_reduce(x) + residual``; returns
        ``(rmsnorm(residual_out) * weight, residual_out)``."""
        c = Call("aiter_custom_all_reduce_add_rmsnorm", like=x)
        x_, r_, w_ = c.input(x, "x"), c.input(residual, "residual"), c.input(weight, "weight")
        out_ = c.output(out, "out", x_.shape, x_.dtype)
        r_out = c.output(residual_out, "residual_out", x_.shape, x_.dtype)
        c.run(out_.c, r_out.c, x_.c, r_.c, w_.c, float(eps), self.handle)
        return c.result(out_), c.result(r_out)

    def all_reduce_add_rmsnorm_quant(self, x, residual, weight, eps=1e-6, dtype="float8_e4m3fn", *, out=None,
                                     scale=None, residual_out=None):
        """The same, then per-row dynamic quantization as ``aiter.add_rmsnorm_quant``:
        returns ``(out, scale, residual_out)``."""
        c = Call("aiter_custom_all_reduce_add_rmsnorm_quant", like=x)
        x_, r_, w_ = c.input(x, "x"), c.input(residual, "residual"), c.input(weight, "weight")
        out_, scale_ = quantized_output(c, x_, dtype, out), row_scales(c, x_, scale)
        r_out = c.output(residual_out, "residual_out", x_.shape, x_.dtype)
        c.run(out_.c, scale_.c, r_out.c, x_.c, r_.c, w_.c, float(eps), self.handle)
        return c.result(out_), c.result(scale_), c.result(r_out)


def fused_allreduce_rmsnorm(ar, x, residual, weight, eps=1e-6):
    """AITER's name: ``(out, residual_out)`` of :meth:`CustomAllReduce.all_reduce_add_rmsnorm`."""
    return ar.all_reduce_add_rmsnorm(x, residual, weight, eps)


_TORCH_LIBRARY = []


def _register_torch():
    """Once, where PyTorch is imported: ``torch.ops.aiter_dist.all_reduce_add_rmsnorm(x, residual, weight, eps, ar)``
    with ``ar`` a CustomAllReduce's ``address``: an op torch.compile and CUDA
    graphs see, with a fake implementation for tracing."""
    if _TORCH_LIBRARY:
        return
    import torch
    lib_ = torch.library.Library("aiter_dist", "DEF")
    lib_.define("all_reduce_add_rmsnorm(Tensor x, Tensor residual, Tensor weight, float eps, int ar) "
                "-> (Tensor, Tensor)")

    def real(x, residual, weight, eps, ar):
        return _LIVE[ar].all_reduce_add_rmsnorm(x, residual, weight, eps)

    def fake(x, residual, weight, eps, ar):
        return torch.empty_like(x), torch.empty_like(x)

    lib_.impl("all_reduce_add_rmsnorm", real, "CUDA")
    torch.library.register_fake("aiter_dist::all_reduce_add_rmsnorm", fake, lib=lib_)
    _TORCH_LIBRARY.append(lib_)
