"""The MLA ops of the table.  mla_decode's scalars and its lse output go to the C
function in an ``aiter_mla_params`` struct, which ``_params`` fills."""
from .types import MUTATED, Arg, Op, Out


def _params(a, outs, dl):
    from .._call import arg_type
    from .._lib import ffi, lib
    p = ffi.new(arg_type("aiter_mla_params_init", "aiter_mla_params *"))  # no parse of the type string
    lib.aiter_mla_params_init(p)
    p.softmax_scale = float(a["softmax_scale"])
    p.kv_scale = float(a.get("kv_scale", 1.0))
    p.num_splits = int(a.get("num_splits", 0))
    if "lse" in outs:
        p.lse = dl(outs["lse"])
    return p


def _rows(a):
    return tuple(a["q"].shape[:3])


def workspace_bytes(a):
    """What aiter_mla_decode_workspace_size says for these shapes (``a``: the
    arguments by name, with ``.shape`` and ``.dtype``)."""
    from .._lib import lib
    from ._shapes import query
    return query(lib.aiter_mla_decode_workspace_size, [a["q"], a["kv_cache"], a["block_table"]],
                 int(a.get("num_splits", 0)))


def mla_ops():
    return [
        Op("mla_decode", "aiter_mla_decode",
           [Arg("q"), Arg("kv_cache"), Arg("block_table"), Arg("context_lens"),
            Arg("softmax_scale", "float"), Arg("workspace", MUTATED, optional=True, keyword=True),
            Arg("kv_scale", "float", default=1.0, keyword=True), Arg("num_splits", "int", default=0, keyword=True)],
           [Out("out", lambda a: _rows(a) + (512,), lambda a: a["q"]),
            Out("lse", _rows, lambda a: "float32", optional=True)],
           ["out", "q", "kv_cache", "block_table", "context_lens", "workspace", "@params"], params=_params,
           scratch={"workspace": workspace_bytes}),
        Op("concat_and_cache_mla", "aiter_concat_and_cache_mla",
           [Arg("kv_c"), Arg("k_pe"), Arg("kv_cache", MUTATED), Arg("slot_mapping"),
            Arg("scale", "float", default=1.0, keyword=True)],
           [], ["kv_cache", "kv_c", "k_pe", "slot_mapping", "scale"]),
    ]
