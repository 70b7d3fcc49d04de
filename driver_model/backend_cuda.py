"""The CUDA backend: run compiled kernels as PTX on a real NVIDIA GPU through the driver API.

The backend keeps the driver's view of a device unchanged: the MMIO register file, the
command queue and device memory behave as on the ISS backend (this class reuses that
model, so ``Device`` allocates, copies and fences exactly as elsewhere). Device memory is
mirrored in one GPU allocation (the *arena*) of the configuration's memory size: a global
address ``a`` of this GPU is ``arena + a`` on the NVIDIA device. A PTX launch copies the
mirror to the arena, launches, synchronises and copies it back, so every buffer the
kernel wrote is visible through ``DeviceArray.to_host()`` afterwards.

PTX modules are loaded with ``cuModuleLoadData`` and cached by their text; the context is
the device's primary context, retained once. ``cuda-python`` (``cuda.bindings.driver``) is
imported lazily, when the backend starts: it is the ``cuda`` extra of the package.

ISA kernels queued through the command queue cannot run here: such a command is refused
with a clear message (compile with the ``ptx`` target; ``simtgpu.compiler_backend`` does so
when the current device uses this backend).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from simtgpu.arch.command_queue import Command, CommandOp
from simtgpu.arch.config import GpuConfig
from simtgpu.isa.abi import GLOBAL_NULL_GUARD

from .backend_iss import IssBackend
from .errors import DriverError

NO_GPU = "no NVIDIA GPU/driver present"


def _driver():
    """Import ``cuda.bindings.driver`` (cuda-python >= 12.6) or the older ``cuda.cuda``."""
    try:
        from cuda.bindings import driver
    except ImportError:
        try:
            from cuda import cuda as driver  # type: ignore[no-redef]
        except ImportError:
            raise DriverError(f"{NO_GPU}: cuda-python is not installed "
                              "(pip install 'simtgpu[cuda]')") from None
    return driver


def _check(result: Any, what: str) -> Any:
    """cuda-python returns ``(CUresult, values...)``; raise on an error, return the values."""
    if not isinstance(result, tuple):
        result = (result,)
    err, rest = result[0], result[1:]
    code = int(getattr(err, "value", err))  # CUresult is an enum; CUDA_SUCCESS is 0
    if code != 0:
        name = getattr(err, "name", str(code))
        raise DriverError(f"CUDA {what} failed: {name}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


def pack_kernel_params(kinds: list[str], args: list[Any], arena: int) -> list[np.ndarray]:
    """One NumPy scalar per PTX parameter, in order: pointers become 64-bit device addresses
    (``arena + address``), ``i32``/``f32`` keep 32 bits, ``i64``/``u64`` are 64-bit. Kept
    alive by the caller until the launch returns."""
    from .device_array import DeviceArray

    if len(kinds) != len(args):
        raise DriverError(f"kernel takes {len(kinds)} arguments, {len(args)} given")
    out: list[np.ndarray] = []
    for kind, value in zip(kinds, args, strict=True):
        if kind == "ptr":
            addr = value.ptr if isinstance(value, DeviceArray) else int(value)
            out.append(np.array([arena + addr], dtype=np.uint64))
        elif kind == "f32":
            out.append(np.array([value], dtype=np.float32))
        elif kind in ("i32", "u32"):
            out.append(np.array([int(value) & 0xFFFFFFFF], dtype=np.uint32))
        elif kind in ("i64", "u64"):
            out.append(np.array([int(value) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))
        else:
            raise DriverError(f"unknown parameter kind {kind!r}")
    return out


@dataclass
class PtxKernel:
    """A loaded PTX entry point and its parameter kinds."""

    name: str
    function: Any
    params: list[tuple[str, str]]


@dataclass
class PtxLaunch:
    """What a PTX launch reports (the GPU has no retire counters to read)."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    backend: str = "cuda"
    wall_s: float = 0.0  # copies in, kernel, copies out
    kernel_s: float = 0.0  # the kernel alone, from CUDA events around the launch
    cycles: int = 0  # (a LaunchResult's field; the GPU's clock is not read)
    instructions: int = 0
    thread_instructions: int = 0
    per_opcode: dict = field(default_factory=dict)


class CudaBackend(IssBackend):
    """A device whose kernels run as PTX on an NVIDIA GPU.

    Parameters
    ----------
    config:
        The simtgpu configuration whose memory map the driver uses (its memory size is
        the size of the GPU arena).
    device_index:
        Which CUDA device to use.
    """

    name = "cuda"

    def __init__(self, config: GpuConfig, device_index: int = 0):
        super().__init__(config)
        self.cu = _driver()
        cu = self.cu
        try:
            _check(cu.cuInit(0), "cuInit")
            count = _check(cu.cuDeviceGetCount(), "cuDeviceGetCount")
        except DriverError as e:
            raise DriverError(f"{NO_GPU}: {e}") from None
        if not count:
            raise DriverError(f"{NO_GPU}: the CUDA driver reports no devices")
        self.cu_device = _check(cu.cuDeviceGet(device_index), "cuDeviceGet")
        self.context = _check(cu.cuDevicePrimaryCtxRetain(self.cu_device),
                              "cuDevicePrimaryCtxRetain")
        _check(cu.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        attr = cu.CUdevice_attribute
        major = _check(cu.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.cu_device), "attribute")
        minor = _check(cu.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.cu_device), "attribute")
        self.arch = "sm_90" if (major, minor) >= (9, 0) else "sm_80"
        if (major, minor) < (8, 0):
            raise DriverError(f"CUDA device {device_index} is sm_{major}{minor}; the "
                              "compiler's PTX needs sm_80 or newer")
        self.arena = int(_check(cu.cuMemAlloc(config.memory_bytes), "cuMemAlloc"))
        self._modules: dict[str, Any] = {}
        self._events = [_check(cu.cuEventCreate(0), "cuEventCreate") for _ in range(2)]

    def describe(self) -> dict[str, str]:
        """The GPU's name, driver version and multiprocessor count, for reports."""
        cu = self.cu
        name = _check(cu.cuDeviceGetName(256, self.cu_device), "cuDeviceGetName")
        version = int(_check(cu.cuDriverGetVersion(), "cuDriverGetVersion"))
        sms = _check(cu.cuDeviceGetAttribute(
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, self.cu_device),
            "attribute")
        return {"gpu": bytes(name).split(b"\0")[0].decode(),
                "driver": f"CUDA {version // 1000}.{version % 1000 // 10}", "sms": str(sms)}

    def allow_shared(self, function: Any, shared_bytes: int, name: str) -> None:
        """Let kernel ``name`` launch with ``shared_bytes`` of dynamic shared memory: past
        48 KiB a kernel must opt in (cuFuncSetAttribute), up to the device's limit."""
        if shared_bytes <= 48 * 1024:
            return
        cu = self.cu
        most = _check(cu.cuDeviceGetAttribute(
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            self.cu_device), "attribute")
        if shared_bytes > most:
            raise DriverError(f"kernel '{name}' needs {shared_bytes} bytes of shared memory; "
                              f"this GPU gives a block at most {most}: use smaller blocks")
        attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        _check(cu.cuFuncSetAttribute(function, attr, int(shared_bytes)),
               f"allowing kernel '{name}' {shared_bytes} bytes of shared memory")

    def timed_ms(self, enqueue: Callable[[], Any]) -> float:
        """GPU milliseconds of the work ``enqueue`` puts on the default stream, from CUDA
        events recorded before and after it; returns once that work is done."""
        cu = self.cu
        start, end = self._events
        _check(cu.cuEventRecord(start, 0), "cuEventRecord")
        enqueue()
        _check(cu.cuEventRecord(end, 0), "cuEventRecord")
        _check(cu.cuEventSynchronize(end), "kernel execution")
        return float(_check(cu.cuEventElapsedTime(start, end), "cuEventElapsedTime"))

    # -- PTX modules and launches ------------------------------------------------------------
    def load_ptx(self, ptx: str, name: str, params: list[tuple[str, str]]) -> PtxKernel:
        """Load (or find in the cache) the module for ``ptx`` and return entry ``name``."""
        key = hashlib.sha256(ptx.encode()).hexdigest()
        module = self._modules.get(key)
        if module is None:
            image = np.frombuffer(ptx.encode() + b"\0", dtype=np.uint8)
            try:
                module = _check(self.cu.cuModuleLoadData(image.ctypes.data), "cuModuleLoadData")
            except DriverError as e:
                raise DriverError(
                    f"the GPU driver did not load the PTX of kernel '{name}' ({e}); ptxas "
                    f"names the reason: write the PTX with `simtgpu compile FILE --kernel "
                    f"{name} --target ptx --arch {self.arch} -o {name}.ptx` and run "
                    f"`ptxas -arch={self.arch} {name}.ptx`") from None
            self._modules[key] = module
        fn = _check(self.cu.cuModuleGetFunction(module, name.encode()), "cuModuleGetFunction")
        return PtxKernel(name, fn, list(params))

    def launch_ptx(self, kernel: PtxKernel, grid, block, args: list[Any],
                   shared_bytes: int = 0) -> PtxLaunch:
        """Copy memory to the GPU, launch ``kernel``, wait, copy memory back."""
        cu = self.cu
        values = pack_kernel_params([k for _, k in kernel.params], list(args), self.arena)
        pointers = np.array([v.ctypes.data for v in values], dtype=np.uint64)
        base = GLOBAL_NULL_GUARD  # the null guard is never touched: copy from past it
        size = self.config.memory_bytes - base
        host = np.frombuffer(bytearray(self.read(base, size)), dtype=np.uint8)
        self.allow_shared(kernel.function, shared_bytes, kernel.name)
        t0 = time.perf_counter()
        _check(cu.cuMemcpyHtoD(self.arena + base, host.ctypes.data, size), "cuMemcpyHtoD")
        kernel_ms = self.timed_ms(lambda: _check(cu.cuLaunchKernel(
            kernel.function, *grid, *block, int(shared_bytes), 0, pointers.ctypes.data, 0),
            "cuLaunchKernel"))
        _check(cu.cuCtxSynchronize(), "kernel execution")
        _check(cu.cuMemcpyDtoH(host.ctypes.data, self.arena + base, size), "cuMemcpyDtoH")
        wall = time.perf_counter() - t0
        self.write(base, host.tobytes())
        del values
        return PtxLaunch(kernel.name, tuple(grid), tuple(block), wall_s=wall,
                         kernel_s=kernel_ms / 1000)

    # -- the command queue -------------------------------------------------------------------
    def _launch_problem(self, cmd: Command) -> str | None:
        if cmd.opcode != CommandOp.LAUNCH:
            return None  # NOP and FENCE complete as on any device
        return ("the cuda backend runs PTX kernels only; compile the kernel with the ptx "
                "target (simtgpu.compiler_backend does this for a cuda device)")

    def close(self) -> None:
        cu = getattr(self, "cu", None)
        if cu is None:
            return
        for module in self._modules.values():
            cu.cuModuleUnload(module)
        self._modules.clear()
        for event in getattr(self, "_events", ()):
            cu.cuEventDestroy(event)
        self._events = []
        if getattr(self, "arena", None):
            cu.cuMemFree(self.arena)
            self.arena = 0
        if getattr(self, "context", None) is not None:
            cu.cuDevicePrimaryCtxRelease(self.cu_device)
            self.context = None

