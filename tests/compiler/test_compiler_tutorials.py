"""Idioms of Triton's tutorials that the language must accept as written, each in a kernel
of our own checked against NumPy (docs/compiler.md, "Triton's tutorials")."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend.errors import KernelError


@triton.jit
def k_row_l2norm(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                 BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    # a persistent row loop as in tutorial 02: num_stages is a parameter and a launch option
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=num_stages):
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=0.0)
        y = x * (num_stages / tl.sqrt(tl.sum(x * x, axis=0)))
        tl.store(out_ptr + row * out_stride + cols, y, mask=mask)


def test_launch_option_named_as_a_parameter_binds_it(iss_device):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((11, 21)).astype(np.float32)
    y = np.full((11, 24), -7.0, np.float32)
    k_row_l2norm[(4,)](y, x, x.strides[0] // 4, y.strides[0] // 4, 11, 21,
                       BLOCK_SIZE=32, num_stages=3, num_warps=1)
    want = 3 * x / np.sqrt((x.astype(np.float64) ** 2).sum(1, keepdims=True))
    assert np.allclose(y[:, :21], want, rtol=1e-5, atol=1e-6)
    assert np.all(y[:, 21:] == -7.0)


@triton.jit
def _as_desc(t, n, BLOCK: tl.constexpr):
    # tutorial 06's _maybe_make_tensor_desc: a descriptor passes through, a pointer gets one
    if isinstance(t, tl.tensor_descriptor):
        return t
    else:
        return tl.make_tensor_descriptor(t, shape=[n, n], strides=[n, 1],
                                         block_shape=[BLOCK, BLOCK])


@triton.jit
def _scale(x, FLIP: tl.constexpr):
    if FLIP:
        return -x
    return x * 2.0


@triton.jit
def k_desc_passthrough(x_ptr, y_ptr, n, BLOCK: tl.constexpr, FLIP: tl.constexpr):
    dx = _as_desc(x_ptr, n, BLOCK)
    dy = _as_desc(_as_desc(y_ptr, n, BLOCK), n, BLOCK)  # already a descriptor: unchanged
    r = tl.program_id(0) * BLOCK
    c = tl.program_id(1) * BLOCK
    dy.store([r, c], _scale(dx.load([r, c]), FLIP).T)


@pytest.mark.parametrize("flip", [False, True])
def test_helper_returns_under_a_compile_time_if(iss_device, flip):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((12, 12)).astype(np.float32)
    y = np.full((12, 12), np.nan, np.float32)
    k_desc_passthrough[(3, 3)](x, y, 12, BLOCK=4, FLIP=flip)
    blocks = x.reshape(3, 4, 3, 4).transpose(0, 2, 3, 1).transpose(0, 2, 1, 3).reshape(12, 12)
    want = -blocks if flip else blocks * 2
    assert np.array_equal(y, want)


@triton.jit
def _runtime_return(x):
    if x > 0:
        return x
    return -x


@triton.jit
def k_runtime_return(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr, _runtime_return(tl.load(x_ptr)))


def test_helper_return_under_a_runtime_if_is_an_error(iss_device):
    x = np.ones(1, np.float32)
    with pytest.raises(KernelError, match=r"test_compiler_tutorials.py:\d+:\d+: .*run time"):
        k_runtime_return[(1,)](x, BLOCK=1)


@triton.jit
def k_scaled_copy(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * scale, mask=offs < n)


def test_early_config_prune_gets_the_launch_keywords(iss_device):
    seen = []

    def prune(configs, named_args, **kwargs):
        # as tutorial 06's prune_invalid_configs: a keyword argument of the launch decides
        seen.append(sorted(kwargs))
        return [c for c in configs if c.kwargs["BLOCK"] <= kwargs["n"]]

    cfgs = [triton.Config({"BLOCK": b}, num_warps=1) for b in (8, 16, 64)]
    k = triton.autotune(cfgs, key=["n"], prune_configs_by={"early_config_prune": prune})(
        k_scaled_copy)
    x = np.arange(20, dtype=np.float32)
    y = np.zeros(20, np.float32)
    k[lambda m: (triton.cdiv(20, m["BLOCK"]),)](x, y, n=20, scale=0.5)
    assert seen == [["n", "scale"]]
    assert set(k.configs_timings) == set(cfgs[:2])
    assert np.array_equal(y, x * 0.5)


@triton.jit
def k_softmax(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
              BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=num_stages):
        cols = tl.arange(0, BLOCK_SIZE)
        x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * out_stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


@pytest.mark.parametrize("config, num_warps", [("full", 8), ("small", 4)])
def test_occupancy_sizing_from_warmup_and_device_properties(config, num_warps):
    # tutorial 02's host part: the launch is sized from the compiled kernel's registers and
    # shared memory and from the device's properties
    from compiler_helpers import current_device
    from simtgpu.compiler_backend.runtime import driver

    assert triton.runtime.driver is driver  # triton.runtime.driver.active..., as Triton
    with current_device("iss", config) as dev:
        cfg = dev.config
        props = driver.active.utils.get_device_properties(driver.active.get_current_device())
        assert props == {"multiprocessor_count": cfg.cores,
                         "max_shared_mem": cfg.shared_bytes_per_core, "warpSize": cfg.lanes,
                         "max_num_regs": 32 * cfg.warps_per_core * cfg.lanes,
                         "max_threads_per_block": cfg.warps_per_core * cfg.lanes}
        assert driver.active.get_current_target().warp_size == cfg.lanes
        num_sm, num_regs = props["multiprocessor_count"], props["max_num_regs"]
        size_smem, warp_size = props["max_shared_mem"], props["warpSize"]

        rng = np.random.default_rng(4)
        x = rng.standard_normal((37, 100)).astype(np.float32)
        y = np.zeros_like(x)
        n_rows, n_cols = x.shape
        block = triton.next_power_of_2(n_cols)
        num_stages = 4 if size_smem > 200000 else 2
        kernel = k_softmax.warmup(y, x, x.strides[0] // 4, y.strides[0] // 4, n_rows, n_cols,
                                  BLOCK_SIZE=block, num_stages=num_stages,
                                  num_warps=num_warps, grid=(1,))
        kernel._init_handles()
        n_regs, smem = kernel.n_regs, kernel.metadata.shared
        assert 0 < n_regs <= 32 and kernel.n_spills >= 0 and smem > 0
        assert kernel.metadata.num_warps == num_warps
        occupancy = num_regs // (n_regs * warp_size * num_warps)
        occupancy = min(occupancy, size_smem // smem)
        num_programs = min(num_sm * occupancy, n_rows)
        assert num_programs >= 1
        kernel[(num_programs, 1, 1)](y, x, x.strides[0] // 4, y.strides[0] // 4, n_rows, n_cols,
                                     block, num_stages)
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        assert np.allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
        with pytest.raises(triton.LaunchError, match="compiled with BLOCK_SIZE"):
            kernel[(1,)](y, x, x.strides[0] // 4, y.strides[0] // 4, n_rows, n_cols, 2 * block,
                         num_stages)


def test_tutorial07_libdevice_asin_from_its_import_path(iss_device):
    # tutorial 07 imports libdevice as `from triton.language.extra import libdevice`
    from simtgpu.compiler_backend.language.extra import libdevice

    @triton.jit
    def asin_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        tl.store(y_ptr + offsets, libdevice.asin(tl.load(x_ptr + offsets, mask=mask)),
                 mask=mask)

    x = np.random.default_rng(7).uniform(-1, 1, 100).astype(np.float32)
    y = np.zeros_like(x)
    asin_kernel[(triton.cdiv(100, 32),)](x, y, 100, BLOCK_SIZE=32)
    np.testing.assert_allclose(y, np.arcsin(x.astype(np.float64)), rtol=1e-6, atol=1e-7)
