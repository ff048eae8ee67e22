"""The MoE ops of the table (topk_softmax is listed with the ops before
attention): topk_sigmoid, grouped_topk, moe_sorting, fused_moe and
fused_moe_fp8 (their scalars go to the C function in an
``aiter_fused_moe_params`` struct, which ``_params`` fills)."""
import operator

from ..errors import InvalidArgumentError
from .types import MUTATED, Arg, Op, Out, enum_to_c as _enum

SCORING = {"softmax": 0, "sigmoid": 1}  # aiter_moe_scoring
ACTIVATIONS = {"silu": 0, "gelu": 1, "gelu_tanh": 2}  # aiter_moe_activation
VARIANTS = {"auto": 0, "portable": 1, "mma": 2}


def _params(a, outs, dl):
    from .._call import arg_type
    from .._lib import ffi, lib
    p = ffi.new(arg_type("aiter_fused_moe_params_init", "aiter_fused_moe_params *"))  # no parse of the type string
    lib.aiter_fused_moe_params_init(p)
    p.activation = _enum(ACTIVATIONS, "activation")(a.get("activation", "silu"))
    p.weights_on_input = 1 if a.get("weights_on_input", False) else 0
    p.block_size = int(a.get("block_size", 0))
    p.variant = _enum(VARIANTS, "variant")(a.get("variant", "auto"))
    return p


def positive_k(k):
    """topk's k: an integer >= 1 (the library reads k from the outputs' shape)."""
    try:
        k = operator.index(k)
    except TypeError:
        raise InvalidArgumentError(f"k: expected an integer, got {type(k).__name__}") from None
    if k < 1:
        raise InvalidArgumentError(f"k: expected 1 <= k <= the experts of gating, got {k}")
    return k


def mask_bytes(mask):
    """A boolean expert mask as uint8 (DLPack's bool is not a dtype the library takes)."""
    name = str(getattr(mask, "dtype", ""))
    if name == "bool":
        return mask.astype("uint8")
    if name == "torch.bool":
        return mask.byte()
    return mask


def _mask():
    return Arg("expert_mask", optional=True, check=mask_bytes)


def _moe_scalars():
    """fused_moe's params struct fields; to_c gives aiter.jax the enum values."""
    return [Arg("activation", "str", default="silu", to_c=_enum(ACTIVATIONS, "activation")),
            Arg("weights_on_input", "bool", default=False, to_c=int), Arg("block_size", "int", default=0),
            Arg("variant", "str", default="auto", to_c=_enum(VARIANTS, "variant"))]


def _topk_shape(a):
    return (a["gating"].shape[0] if len(a["gating"].shape) else 0, a["k"])


def _k_columns(a):
    """A caller's topk_weights must have k columns: k reaches the library only through them."""
    w = a["topk_weights"]
    if len(w.shape) == 2 and w.shape[1] != a["k"]:
        raise InvalidArgumentError(f"topk_weights: expected shape[1] == k ({a['k']}), got shape {w.shape}")


def _topk_outs():
    return [Out("topk_weights", _topk_shape, lambda a: "float32"), Out("topk_ids", _topk_shape, lambda a: "int32")]


def _k():
    return Arg("k", "int", check=positive_k)


def topk_op(name, symbol):
    """topk_softmax / topk_sigmoid: the scores, then the k best experts."""
    return Op(name, symbol, [Arg("gating"), _k(), Arg("renormalize", "bool", default=False, to_c=int, keyword=True)],
              _topk_outs(), ["topk_weights", "topk_ids", "gating", "renormalize"], check=_k_columns)


def workspace_bytes(a, elem_bytes):
    """fused_moe's workspace for these arguments (``a``: by name, tensors with
    ``.shape``); 0 for a malformed one, which the library then names."""
    from .._call import arg_type
    from .._lib import ffi, lib
    x, w1, ids, mask = (a.get(n) for n in ("x", "w1", "topk_ids", "expert_mask"))
    if len(x.shape) != 2 or len(w1.shape) != 3 or len(ids.shape) != 2:
        return 0
    p = ffi.new(arg_type("aiter_fused_moe_params_init", "aiter_fused_moe_params *"))  # no parse of the type string
    lib.aiter_fused_moe_params_init(p)
    p.activation = _enum(ACTIVATIONS, "activation")(a.get("activation", "silu"))
    p.weights_on_input = 1 if a.get("weights_on_input", False) else 0
    p.block_size = operator.index(a.get("block_size", 0))
    experts = mask.shape[0] if mask is not None and len(mask.shape) == 1 else w1.shape[0]
    return int(lib.aiter_fused_moe_workspace_size(x.shape[0], ids.shape[1], experts, x.shape[1], w1.shape[1] // 2,
                                                  elem_bytes, p))


def _sorted_rows(a):
    from .._lib import lib
    shape = tuple(a["topk_ids"].shape)
    tokens, k = shape if len(shape) == 2 else (0, 1)
    return max(0, int(lib.aiter_moe_sorting_max_rows(tokens, k, a["num_experts"], a["block_size"])))


def moe_ops():
    routing_order = ["topk_weights", "topk_ids", "gating"]
    return [
        topk_op("topk_sigmoid", "aiter_topk_sigmoid"),
        Op("grouped_topk", "aiter_grouped_topk",
           [Arg("gating"), _k(), Arg("num_expert_group", "int"), Arg("topk_group", "int"),
            Arg("correction_bias", optional=True, keyword=True),
            Arg("scoring_func", "str", default="softmax", to_c=_enum(SCORING, "scoring_func"), keyword=True),
            Arg("renormalize", "bool", default=True, to_c=int, keyword=True),
            Arg("routed_scaling_factor", "float", default=1.0, keyword=True)],
           _topk_outs(), routing_order + ["correction_bias", "num_expert_group", "topk_group", "scoring_func",
                                          "renormalize", "routed_scaling_factor"], check=_k_columns),
        Op("moe_sorting", "aiter_moe_sorting",
           [Arg("topk_ids"), Arg("num_experts", "int"), Arg("block_size", "int"),
            _mask()],
           [Out("sorted_ids", lambda a: (_sorted_rows(a),), lambda a: "int32"),
            Out("block_experts", lambda a: (_sorted_rows(a) // max(1, a["block_size"]),), lambda a: "int32"),
            Out("num_valid", lambda a: (1,), lambda a: "int32")],
           ["sorted_ids", "block_experts", "num_valid", "topk_ids", "expert_mask", "num_experts", "block_size"]),
        Op("fused_moe", "aiter_fused_moe",
           [Arg("x"), Arg("w1"), Arg("w2"), Arg("topk_weights"), Arg("topk_ids"), Arg("workspace", MUTATED),
            _mask()] + _moe_scalars(),
           [Out.same_as("out", "x")],
           ["out", "workspace", "x", "w1", "w2", "topk_weights", "topk_ids", "expert_mask", "@params"],
           params=_params, scratch={"workspace": lambda a: workspace_bytes(a, 2)}),
        Op("fused_moe_fp8", "aiter_fused_moe_fp8",
           [Arg("x"), Arg("w1"), Arg("w2"), Arg("w1_scale"), Arg("w2_scale"), Arg("topk_weights"), Arg("topk_ids"),
            Arg("workspace", MUTATED), _mask()] + _moe_scalars(),
           [Out.same_as("out", "x")],
           ["out", "workspace", "x", "w1", "w2", "w1_scale", "w2_scale", "topk_weights", "topk_ids", "expert_mask",
            "@params"], params=_params, scratch={"workspace": lambda a: workspace_bytes(a, 1)}),
    ]
