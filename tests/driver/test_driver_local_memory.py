"""The per-launch local area (isa.abi.LOCAL_PARAM): allocated per launch, one per launch
even while two are queued, freed when the launch completes, and refused clearly."""

import numpy as np
import pytest
from simtgpu.driver_model import Device, DriverError

# Each thread writes its global id into its word of the local area (one word per thread,
# slot-major: base + 4 * gtid), reads it back and stores the word's address and value.
PROBE = """
.kernel probe
    .param addr, ptr
    .param value, ptr
    .param __local, ptr
    ldparam r1, __local
    s2r r2, ctaid.x
    s2r r3, ntid.x
    mul r2, r2, r3
    s2r r4, tid
    add r2, r2, r4
    shli r5, r2, 2
    add r6, r1, r5
    stg [r6], r2
    ldg r7, [r6]
    ldparam r8, addr
    add r8, r8, r5
    stg [r8], r6
    ldparam r8, value
    add r8, r8, r5
    stg [r8], r7
    exit
.end
"""


@pytest.fixture(params=["iss", pytest.param("rtl", marks=pytest.mark.slow)])
def dev(request):
    try:
        d = Device(backend=request.param, config="tiny")
    except DriverError as e:
        pytest.skip(f"{request.param} backend unavailable ({e})")
    yield d
    d.close()


def test_two_queued_launches_get_separate_areas_which_are_freed(dev):
    kernel = dev.load_module(PROBE).kernel("probe")
    before = dev.memory_stats().allocations
    outs = [(dev.zeros(16, np.uint32), dev.zeros(16, np.uint32)) for _ in range(2)]
    during = dev.memory_stats().allocations
    for a, v in outs:
        dev.launch_async(kernel, grid=2, block=8, args=(a, v), local_bytes=4)
    assert dev.memory_stats().allocations == during + 4  # two parameter blocks, two areas
    dev.synchronize()
    assert dev.memory_stats().allocations == during  # areas and parameter blocks freed
    (a0, v0), (a1, v1) = [(a.to_host(), v.to_host()) for a, v in outs]
    gtid = np.arange(16, dtype=np.uint32)
    for a, v in ((a0, v0), (a1, v1)):
        np.testing.assert_array_equal(v, gtid)
        np.testing.assert_array_equal(np.diff(a.astype(np.int64)), 4)  # slot-major
    assert a1[0] >= a0[-1] + 4 or a0[0] >= a1[-1] + 4  # disjoint areas
    for a, v in outs:
        dev.free(a)
        dev.free(v)
    assert dev.memory_stats().allocations == before


def test_local_area_errors_name_the_kernel(dev):
    kernel = dev.load_module(PROBE).kernel("probe")
    a = dev.zeros(16, np.uint32)
    with pytest.raises(DriverError, match="probe: the kernel uses local memory"):
        dev.launch(kernel, grid=2, block=8, args=(a, a))
    with pytest.raises(DriverError, match=r"launch of probe: its local memory \(1048576 "
                       r"threads x 4096 bytes = \d+ bytes\) exceeds the device memory"):
        dev.launch(kernel, grid=(1024, 1024), block=1, args=(a, a), local_bytes=4096)
    with pytest.raises(DriverError, match="multiple of 4"):
        dev.launch(kernel, grid=1, block=1, args=(a, a), local_bytes=3)
