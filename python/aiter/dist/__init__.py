"""Tensor parallelism: collectives between the GPUs of several processes.

``Communicator``: one rank's NCCL (NVIDIA) or RCCL (AMD) communicator, from a
``torch.distributed`` process group (:meth:`Communicator.from_process_group`) or
from a unique id the caller hands to every rank (:func:`unique_id`), with
``all_reduce``, ``all_gather`` and ``reduce_scatter`` on PyTorch or CuPy arrays.

``CustomAllReduce``: the all-reduce for the GPUs of one machine over buffers the
ranks share (one-shot and two-shot kernels, NCCL above ``max_bytes``), CUDA-graph
capturable, with results bitwise identical on every rank; and its fusion with
residual add + RMSNorm (+ per-row fp8/int8 quantization).  With PyTorch, the fused
op is also ``torch.ops.aiter_dist.all_reduce_add_rmsnorm``.

Every rank must make the same calls in the same order, with the same shapes.
"""
from ._comm import Communicator, unique_id
from ._custom import ALGOS, CustomAllReduce, fused_allreduce_rmsnorm

__all__ = ["ALGOS", "Communicator", "CustomAllReduce", "fused_allreduce_rmsnorm", "unique_id"]
