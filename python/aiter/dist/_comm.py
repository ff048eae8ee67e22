"""One rank's NCCL/RCCL communicator (aiter_comm of include/aiter/dist.h)."""
from .._call import Call
from .._frameworks import KDL_CUDA
from .._lib import check, ffi, lib
from ._device import dl_device


def unique_id(device_type=KDL_CUDA):
    """A new communicator id (128 bytes) for the collective library of ``device_type``."""
    cid = ffi.new("aiter_comm_id *")
    check(lib.aiter_comm_unique_id(cid, int(device_type)))
    return bytes(ffi.buffer(cid.bytes))


class Communicator:
    """Rank ``rank`` of ``world_size`` on ``device``; every rank passes the same ``uid``.
    Creating one is a collective: it returns once every rank has called it."""

    def __init__(self, uid, rank, world_size, device):
        if len(uid) != 128:
            raise ValueError(f"uid: expected the 128 bytes of unique_id(), got {len(uid)}")
        cid = ffi.new("aiter_comm_id *")
        ffi.memmove(cid.bytes, uid, 128)
        box = ffi.new("aiter_comm **")
        dev = dl_device(device)
        check(lib.aiter_comm_create(box, cid, int(rank), int(world_size),
                                    {"device_type": dev[0], "device_id": dev[1]}))
        self._c = box[0]
        self.rank, self.world_size, self.device = int(rank), int(world_size), dev

    @classmethod
    def from_process_group(cls, group=None, device=None):
        """A communicator over the ranks of a ``torch.distributed`` group: its rank 0
        makes the id and broadcasts it through the group."""
        import torch
        import torch.distributed as dist
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        dev = dl_device(device if device is not None else torch.cuda.current_device())
        box = [unique_id(dev[0]) if rank == 0 else None]
        dist.broadcast_object_list(box, src=dist.get_global_rank(group, 0) if group is not None else 0, group=group)
        return cls(box[0], rank, world, dev)

    @property
    def handle(self):
        if self._c is None:
            raise ValueError("the communicator is closed")
        return self._c

    def close(self):
        if getattr(self, "_c", None) is not None:
            c, self._c = self._c, None
            check(lib.aiter_comm_destroy(c))

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def all_reduce(self, x, out=None):
        """The sum of ``x`` over the ranks (``out`` may be ``x``)."""
        c = Call("aiter_all_reduce", like=x)
        x_ = c.input(x, "x")
        out_ = c.output(out, "out", x_.shape, x_.dtype)
        c.run(out_.c, x_.c, self.handle)
        return c.result(out_)

    def all_gather(self, x, out=None):
        """The ranks' ``x`` concatenated along dim 0."""
        c = Call("aiter_all_gather", like=x)
        x_ = c.input(x, "x")
        shape = (x_.shape[0] * self.world_size,) + tuple(x_.shape[1:]) if x_.shape else (self.world_size,)
        out_ = c.output(out, "out", shape, x_.dtype)
        c.run(out_.c, x_.c, self.handle)
        return c.result(out_)

    def reduce_scatter(self, x, out=None):
        """This rank's part (along dim 0) of the sum of ``x`` over the ranks."""
        c = Call("aiter_reduce_scatter", like=x)
        x_ = c.input(x, "x")
        shape = (x_.shape[0] // self.world_size,) + tuple(x_.shape[1:]) if x_.shape else ()
        out_ = c.output(out, "out", shape, x_.dtype)
        c.run(out_.c, x_.c, self.handle)
        return c.result(out_)
