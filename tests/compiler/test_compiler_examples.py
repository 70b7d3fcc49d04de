"""Every examples/dsl kernel on the ISS at several sizes, ragged edges included, against
NumPy (each example's run() does the comparison)."""

import pytest
from compiler_helpers import example

SIZES = {
    "vector_add": [1, 63, 64, 200, 1003],
    "saxpy": [5, 129, 640],
    "softmax": [40, 123, 250, 431],
    "rmsnorm": [33, 95, 160],
    "layernorm": [51, 140, 333],
    "sum_reduction": [1, 100, 1000],
    "histogram": [7, 300, 1001],
    "transpose": [1, 9, 16, 21],
    "matmul": [1, 8, 13],
    "matmul_autotune": [1, 13],
    "compaction": [1, 77, 1000],
}
CASES = [(name, size) for name, sizes in SIZES.items() for size in sizes]


@pytest.mark.parametrize("name, size", CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_example_matches_numpy(iss_device, name, size):
    ok, detail, stats = example(name).run(size, seed=size)
    assert ok, detail
    assert stats.instructions > 0


def test_examples_cover_the_list():
    from compiler_helpers import EXAMPLES

    scripts = {p.stem for p in EXAMPLES.glob("*.py")} - {"dsl_common"}
    assert scripts == set(SIZES)


def test_script_entry_point(capsys):
    assert example("vector_add").__name__ == "_example_dsl_vector_add"
    from dsl_common import main

    assert main("vector_add", example("vector_add").run, 100, ["--size", "100"]) == 0
    assert "vector_add: PASS" in capsys.readouterr().out


def test_launch_options_and_cache(iss_device):
    import numpy as np

    m = example("vector_add")
    x = np.ones(70, np.float32)
    out = np.zeros(70, np.float32)
    m.add_kernel.cache.clear()
    for warps in (1, 2, 4):
        out[:] = 0
        m.add_kernel[(3,)](x, x, out, 70, BLOCK_SIZE=32, num_warps=warps)
        assert np.array_equal(out, 2 * x)
    m.add_kernel[(3,)](x, x, out, 70, BLOCK_SIZE=32, num_warps=4)
    assert len(m.add_kernel.cache) == 3  # one compile per (signature, constexprs, warps)
    d = iss_device.to_device(x)
    o = iss_device.empty(70, np.float32)
    m.add_kernel[(3,)](d, d, o, 70, BLOCK_SIZE=32)  # DeviceArrays are used in place
    assert np.array_equal(o.to_host(), 2 * x)


def test_launch_mistakes_are_clear(iss_device):
    import numpy as np
    from simtgpu.compiler_backend import LaunchError

    m = example("vector_add")
    x = np.ones(8, np.float32)
    with pytest.raises(LaunchError, match="missing argument 'n_elements'"):
        m.add_kernel[(1,)](x, x, x, BLOCK_SIZE=8)
    with pytest.raises(LaunchError, match="has no parameter 'BLOCK'"):
        m.add_kernel[(1,)](x, x, x, 8, BLOCK=8)
    with pytest.raises(LaunchError, match="float64 are not supported"):
        m.add_kernel[(1,)](x.astype(np.float64), x, x, 8, BLOCK_SIZE=8)
    with pytest.raises(LaunchError, match="launch it as add_kernel\\[grid\\]"):
        m.add_kernel(x, x, x, 8, BLOCK_SIZE=8)


def test_full_instruction_memory_unloads_old_kernels():
    import numpy as np
    import simtgpu.compiler_backend as triton
    from simtgpu.driver_model import Device

    dev = Device(backend="iss", config="tiny")  # 4 KiB of instruction memory
    triton.set_device(dev)
    try:
        add, saxpy = example("vector_add").add_kernel, example("saxpy").saxpy_kernel
        x = np.arange(300, dtype=np.float32)
        # three kernels of about 1.5 KiB each do not fit together
        for kernel, block, warps in ((add, 128, 2), (add, 64, 1), (saxpy, 128, 2),
                                     (add, 128, 2)):
            out = np.zeros(300, np.float32) if kernel is add else x.copy()
            args = (x, x, out, 300) if kernel is add else (x, out, 2.0, 300)
            kw = {"BLOCK_SIZE" if kernel is add else "BLOCK": block}
            kernel[(triton.cdiv(300, block),)](*args, num_warps=warps, **kw)
            assert np.array_equal(out, 2 * x if kernel is add else 3 * x)
        assert dev.imem_stats().allocated_bytes <= 4096
    finally:
        triton.set_device(None)
        dev.close()
