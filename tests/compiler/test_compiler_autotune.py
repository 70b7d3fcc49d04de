"""triton.autotune, triton.Config and triton.heuristics: the choice is the config with the
smallest device measure (checked against each config's own launch), cached per key;
heuristics compute constexprs; reset_to_zero/restore_value keep benchmark launches from
showing in the result; misuse is refused with the kernel's place."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import current_device, example
from simtgpu.compiler_backend.autotune import measure
from simtgpu.compiler_backend.jit import LaunchError
from simtgpu.errors import SimtgpuError

CONFIGS = [triton.Config({"BLOCK_SIZE": 64}), triton.Config({"BLOCK_SIZE": 8}, num_warps=1)]
add = example("vector_add").add_kernel  # (x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE)


def _grid(n, name="BLOCK_SIZE"):
    return lambda meta: (triton.cdiv(n, meta[name]),)


def _own_measures(dev, n):
    """Each config launched by itself (no autotuner): the device's measure."""
    x = np.arange(n, dtype=np.float32)
    out = []
    for c in CONFIGS:
        r = add[_grid(n)](x, x, np.zeros(n, np.float32), n, **c.all_kwargs())
        out.append(measure(dev, r))
    return out


def test_autotune_picks_the_config_with_fewer_instructions_per_key(iss_device):
    calls = []
    tuned = triton.autotune(CONFIGS, key=["n_elements"],
                            pre_hook=lambda args: calls.append(args["n_elements"]))(
        add)
    seen = {}
    for n in (8, 1000, 8):
        x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        o = np.zeros(n, np.float32)
        y = 2 * x
        tuned[_grid(n)](x, y, o, n)
        assert np.array_equal(o, x + y)
        own = _own_measures(iss_device, n)
        assert own[0] != own[1]
        assert tuned.best_config is CONFIGS[int(np.argmin(own))], (n, own)
        if n not in seen:
            assert [tuned.configs_timings[c] for c in CONFIGS] == own
        seen[n] = tuned.best_config
    # one small problem wants the small block, the large one the large block
    assert seen[8] is CONFIGS[1] and seen[1000] is CONFIGS[0]
    # tuned once per key: two benchmark launches for n=8 and two for n=1000, none after
    assert calls == [8, 8, 1000, 1000]
    assert set(tuned.cache) == {(8, "float32", "float32", "float32"),
                                (1000, "float32", "float32", "float32")}
    # a NumPy scalar keys by its value, an array by its shape and dtype
    assert tuned.key_of({"n_elements": np.uint32(9), "x_ptr": np.zeros(2, np.int32)}) == (
        9, "int32")


@triton.jit
def write_block(o_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.full((BLOCK,), BLOCK, tl.int32) + EVEN, mask=offs < n)


def test_heuristics_compute_constexprs(iss_device):
    k = triton.heuristics({"BLOCK": lambda a: triton.next_power_of_2(a["n"]),
                           "EVEN": lambda a: int(a["n"] == a["BLOCK"])})(write_block)
    for n, want in ((5, 8), (16, 17), (17, 32)):
        o = np.zeros(n, np.int32)
        k[(1,)](o, n)
        assert o.tolist() == [want] * n


def test_heuristics_over_an_autotuner_and_under_one(iss_device):
    inner = triton.autotune([triton.Config({"BLOCK": 8}), triton.Config({"BLOCK": 32})],
                            key=["n"])(write_block)
    outer = triton.heuristics({"EVEN": lambda a: int(a["n"] % 8 == 0)})(inner)
    o = np.zeros(8, np.int32)
    outer[(1,)](o, 8)
    b = inner.best_config.kwargs["BLOCK"]
    assert o.tolist() == [b + 1] * 8
    under = triton.autotune([triton.Config({})], key=[])(
        triton.heuristics({"BLOCK": lambda a: 16, "EVEN": lambda a: 0})(write_block))
    o = np.zeros(16, np.int32)
    under[(1,)](o, 16)
    assert o.tolist() == [16] * 16


@triton.jit
def accumulate(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(acc_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0), axis=0))


@triton.jit
def bump(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)


def test_reset_to_zero_and_restore_value(iss_device):
    cfgs = [triton.Config({"BLOCK": 8}), triton.Config({"BLOCK": 16})]
    x = np.arange(40, dtype=np.int32)
    acc = np.zeros(1, np.int32)
    k = triton.autotune(cfgs, key=["n"], reset_to_zero=["acc_ptr"])(accumulate)
    k[_grid(40, "BLOCK")](x, acc, 40)
    assert acc[0] == x.sum()  # not three times: benchmark runs were cleared
    y = np.arange(40, dtype=np.int32)
    k2 = triton.autotune(cfgs, key=["n"], restore_value=["x_ptr"])(bump)
    k2[_grid(40, "BLOCK")](y, 40)
    assert np.array_equal(y, np.arange(40) + 1)  # bumped once, not three times


def test_prune_configs_by(iss_device):
    cfgs = [triton.Config({"BLOCK_SIZE": b}) for b in (8, 16, 32, 64)]
    seen = []

    def early(configs, named):
        seen.append(len(configs))
        return [c for c in configs if c.kwargs["BLOCK_SIZE"] >= 16]

    k = triton.autotune(cfgs, key=["n_elements"], prune_configs_by={
        "early_config_prune": early,
        "perf_model": lambda **kw: -kw["BLOCK_SIZE"], "top_k": 1})(add)
    x = np.ones(100, np.float32)
    o = np.zeros(100, np.float32)
    k[_grid(100)](x, x, o, 100)
    assert seen == [4] and list(k.configs_timings) == [cfgs[3]]
    assert k.best_config is cfgs[3] and np.all(o == 2)


def test_configs_that_cannot_run_are_skipped(iss_device):
    most = iss_device.config.max_threads_per_block
    # twice the threads a block of the device's configuration may have
    too_many_threads = triton.Config({"BLOCK_SIZE": 64},
                                     num_warps=2 * iss_device.config.warps_per_core)
    too_big = triton.Config({"BLOCK_SIZE": 1 << 18})  # over MAX_ELEMENTS_PER_THREAD
    fits = triton.Config({"BLOCK_SIZE": 32}, num_warps=2)
    k = triton.autotune([too_many_threads, too_big, fits], key=["n_elements"])(add)
    x = np.arange(100, dtype=np.float32)
    o = np.zeros_like(x)
    k[_grid(100)](x, x, o, 100)
    assert np.array_equal(o, x + x) and k.best_config is fits
    assert k.configs_timings[too_many_threads] == k.configs_timings[too_big] == float("inf")
    assert f"at most {most}" in str(k.config_errors[too_many_threads])
    only_bad = triton.autotune([too_many_threads, too_big], key=["n_elements"])(add)
    with pytest.raises(SimtgpuError, match=f"at most {most}"):  # all fail: the first one's
        only_bad[_grid(100)](x, x, o, 100)


def test_autotune_misuse_is_refused():
    with pytest.raises(LaunchError, match=r"vector_add.py:\d+: triton.autotune "
                       "key names 'm', which is not a parameter of add_kernel"):
        triton.autotune(CONFIGS, key=["m"])(add)
    with pytest.raises(LaunchError, match="prune_configs_by takes"):
        triton.autotune(CONFIGS, key=["n_elements"], prune_configs_by={"topk": 2})(add)
    with pytest.raises(LaunchError, match="custom do_bench is not supported"):
        triton.autotune(CONFIGS, key=["n_elements"], do_bench=lambda f: 0.0)
    with pytest.raises(LaunchError, match="decorates a @triton.jit kernel"):
        triton.autotune(CONFIGS, key=["n_elements"])(lambda x: x)
    with pytest.raises(LaunchError, match="not a parameter of add_kernel"):
        triton.heuristics({"BLOK": lambda a: 8})(add)
    k = triton.autotune(CONFIGS, key=["n_elements"])(add)
    x = np.ones(8, np.float32)
    with pytest.raises(LaunchError, match=r"\['BLOCK_SIZE'\] are set by the autotuner"):
        k[(1,)](x, x, x, 8, BLOCK_SIZE=8)
    with pytest.raises(LaunchError, match="launch it as add_kernel\\[grid\\]"):
        k(x, x, x, 8)


def test_autotune_on_cuda_measures_time():
    with current_device("cuda") as dev:
        tuned = triton.autotune(CONFIGS, key=["n_elements"])(add)
        x = np.arange(4096, dtype=np.float32)
        o = np.zeros_like(x)
        tuned[_grid(x.size)](x, x, o, x.size)
        assert np.array_equal(o, x + x)
        times = [tuned.configs_timings[c] for c in CONFIGS]
        assert all(0 < t < 1 for t in times), times
        assert tuned.best_config is CONFIGS[int(np.argmin(times))]
        assert measure(dev, tuned[_grid(x.size)](x, x, o, x.size)) > 0
