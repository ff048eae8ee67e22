"""Lies told to the collectives' C ABI (include/aiter/dist.h), for fuzz_abi.py:
NULL handles and pointers, ranks and world sizes out of range, device types that
do not exist.  Never a valid world size above 1: a valid aiter_comm_create would
wait for peers that never come."""

FUNCTIONS = {"aiter_comm_unique_id", "aiter_comm_create", "aiter_comm_destroy", "aiter_comm_get_info",
             "aiter_all_reduce", "aiter_all_gather", "aiter_reduce_scatter", "aiter_custom_ar_create",
             "aiter_custom_ar_handle", "aiter_custom_ar_open_peers", "aiter_custom_ar_destroy",
             "aiter_custom_ar_max_bytes", "aiter_custom_all_reduce", "aiter_custom_all_reduce_add_rmsnorm",
             "aiter_custom_all_reduce_add_rmsnorm_quant"}


def fuzz_dist(rng, ffi, lib, check_status, device_value):
    comm_box, ar_box, cid = ffi.new("aiter_comm **"), ffi.new("aiter_custom_ar **"), ffi.new("aiter_comm_id *")
    maybe = lambda p: p if rng.random() < 0.8 else ffi.NULL  # noqa: E731
    for _ in range(5):
        device = device_value(int(rng.choice([1, 2, 10, 3, 100, -1])), int(rng.choice([0, 1, -1])))
        world, rank = int(rng.choice([0, -1, 1025, 2 ** 31 - 1])), int(rng.integers(-2, 4))
        check_status("aiter_comm_create", lib.aiter_comm_create(maybe(comm_box), maybe(cid), rank, world, device))
        check_status("aiter_custom_ar_create",
                     lib.aiter_custom_ar_create(maybe(ar_box), ffi.NULL, rank, int(rng.choice([0, 9, -1])), device,
                                                int(rng.choice([0, 1, 1 << 40]))))
        check_status("aiter_comm_unique_id", lib.aiter_comm_unique_id(ffi.NULL, int(rng.integers(-2, 12))))
    null4 = (ffi.NULL,) * 4
    check_status("aiter_comm_destroy", lib.aiter_comm_destroy(ffi.NULL))
    check_status("aiter_comm_get_info", lib.aiter_comm_get_info(*null4))
    for name in ("aiter_all_reduce", "aiter_all_gather", "aiter_reduce_scatter"):
        check_status(name, getattr(lib, name)(*null4))
    check_status("aiter_custom_all_reduce",
                 lib.aiter_custom_all_reduce(ffi.NULL, ffi.NULL, int(rng.integers(-5, 9)), ffi.NULL, ffi.NULL))
    check_status("aiter_custom_all_reduce_add_rmsnorm",
                 lib.aiter_custom_all_reduce_add_rmsnorm(*null4, ffi.NULL, 1e-6, ffi.NULL, ffi.NULL))
    check_status("aiter_custom_all_reduce_add_rmsnorm_quant",
                 lib.aiter_custom_all_reduce_add_rmsnorm_quant(*null4, ffi.NULL, ffi.NULL, 1e-6, ffi.NULL, ffi.NULL))
    check_status("aiter_custom_ar_handle", lib.aiter_custom_ar_handle(ffi.NULL, ffi.NULL))
    check_status("aiter_custom_ar_open_peers", lib.aiter_custom_ar_open_peers(ffi.NULL, ffi.NULL))
    check_status("aiter_custom_ar_destroy", lib.aiter_custom_ar_destroy(ffi.NULL))
    check_status("aiter_custom_ar_max_bytes", lib.aiter_custom_ar_max_bytes(ffi.NULL, ffi.new("size_t *")))
