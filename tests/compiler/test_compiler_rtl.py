"""The same compiled kernels on the RTL (Verilator through the driver's rtl backend).

One test, so that a parallel run builds the Verilator model in one worker only."""

import pytest
from compiler_helpers import current_device, example


@pytest.mark.slow
def test_examples_on_rtl():
    with current_device("rtl"):
        for name, size in (("vector_add", 45), ("softmax", 41), ("matmul", 8),
                           ("histogram", 70)):
            ok, detail, stats = example(name).run(size, seed=2)
            assert ok, f"{name}: {detail}"
            assert stats.instructions > 0
