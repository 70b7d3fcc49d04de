"""The same compiled kernels on the RTL (Verilator through the driver's rtl backend).

One test, so that a parallel run builds the Verilator model in one worker only."""

import pytest
import simtgpu.compiler_backend as triton
from compiler_helpers import current_device, example


@pytest.mark.slow
def test_examples_on_rtl():
    with current_device("rtl") as dev:
        for name, size in (("vector_add", 45), ("softmax", 41), ("matmul", 8),
                           ("histogram", 70), ("compaction", 77)):
            ok, detail, stats = example(name).run(size, seed=2)
            assert ok, f"{name}: {detail}"
            assert stats.instructions > 0
        # a divergent while loop with break and continue (per-thread trip counts)
        import numpy as np
        from test_compiler_loops import _collatz, k_collatz

        x = np.arange(1, 90, dtype=np.int32)
        y = np.zeros_like(x)
        k_collatz[(3,)](x, y, len(x), LIMIT=40, block=(32, 1, 1))
        assert y.tolist() == [_collatz(int(v), 40) for v in x]
        # autotuning measures cycles on the RTL: it keeps the config with fewer cycles
        from test_compiler_autotune import CONFIGS, _grid, _own_measures, add

        tuned = triton.autotune(CONFIGS, key=["n_elements"])(add)
        xs = np.arange(64, dtype=np.float32)
        o = np.zeros(64, np.float32)
        tuned[_grid(64)](xs, xs, o, 64)
        assert np.array_equal(o, xs + xs)
        own = _own_measures(dev, 64)
        assert [tuned.configs_timings[c] for c in CONFIGS] == own
        assert tuned.best_config is CONFIGS[int(np.argmin(own))]

        # fp16/bf16 elementwise, tl.dot on the matrix unit, the matmul tutorial with fp16
        from test_compiler_half import half_kernels_on_rtl

        half_kernels_on_rtl()

        # 64-bit integers: register pairs through the same ALU, loads and stores
        from test_compiler_int64 import int64_kernels_on_rtl

        int64_kernels_on_rtl()

        # software pipelining: loads a stage ahead give num_stages=1's bits
        from test_compiler_pipeline import pipeline_on_rtl

        pipeline_on_rtl()
