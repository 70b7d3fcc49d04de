"""The cuda backend: parameter packing is checked everywhere; launches on a real GPU run only
where an NVIDIA GPU, its driver and cuda-python are present (skipped otherwise)."""

import numpy as np
import pytest
from compiler_helpers import current_device, example
from simtgpu.driver_model import DriverError


def test_module_imports_without_cuda_python():
    from simtgpu.driver_model import backend_cuda

    assert backend_cuda.CudaBackend.name == "cuda"


def test_pack_kernel_params_widens_pointers(iss_device):
    from simtgpu.driver_model.backend_cuda import pack_kernel_params

    arr = iss_device.empty(4, np.float32)
    vals = pack_kernel_params(["ptr", "i32", "f32", "ptr"], [arr, -1, 1.5, 0x2000],
                              0x7F00_0000_0000)
    assert vals[0].dtype == np.uint64 and int(vals[0][0]) == 0x7F00_0000_0000 + arr.ptr
    assert vals[1].dtype == np.uint32 and int(vals[1][0]) == 0xFFFF_FFFF
    assert vals[2].dtype == np.float32 and vals[2].tobytes() == np.float32(1.5).tobytes()
    assert int(vals[3][0]) == 0x7F00_0000_2000
    with pytest.raises(DriverError, match="takes 2 arguments"):
        pack_kernel_params(["ptr", "i32"], [arr], 0)


@pytest.fixture()
def cuda_device():
    with current_device("cuda") as dev:
        yield dev


@pytest.mark.parametrize("name, size", [("vector_add", 1003), ("softmax", 431),
                                        ("matmul", 37), ("histogram", 999),
                                        ("layernorm", 333), ("transpose", 21)])
def test_examples_on_the_gpu(cuda_device, name, size):
    ok, detail, _ = example(name).run(size, seed=1)
    assert ok, detail


def test_add_mul_fma_bit_exact_with_the_iss(cuda_device):
    import simtgpu.compiler_backend as triton
    from simtgpu.driver_model import Device

    m = example("saxpy")
    rng = np.random.default_rng(3)
    x = rng.standard_normal(777).astype(np.float32)
    y = rng.standard_normal(777).astype(np.float32)
    gpu = y.copy()
    m.saxpy_kernel[(triton.cdiv(777, 256),)](x, gpu, 1.75, 777, BLOCK=256)
    iss = Device(backend="iss", config="small")
    triton.set_device(iss)
    cpu = y.copy()
    m.saxpy_kernel[(triton.cdiv(777, 256),)](x, cpu, 1.75, 777, BLOCK=256)
    iss.close()
    assert gpu.tobytes() == cpu.tobytes()
