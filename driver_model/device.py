"""The host API: a device, its memory, loaded modules and launches through the command queue.

Modelled on the CUDA driver API. Every launch goes the way a real driver sends it: the
arguments are packed into a parameter block in device memory, a 64-byte LAUNCH record is
written into the ring buffer, the doorbell register is rung, and completion is seen when
the device writes the record's fence value (docs/command-queue.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import inspect
import math
import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import numpy as np
from simtgpu.arch import command_queue as cq
from simtgpu.arch.command_queue import Command, CommandOp, Control, Mmio, Status
from simtgpu.arch.config import ConfigError, GpuConfig, get_config
from simtgpu.assembler import ObjectFile, assemble, assemble_file
from simtgpu.isa import FaultCause
from simtgpu.isa.abi import GLOBAL_NULL_GUARD, LOCAL_PARAM
from simtgpu.sim import FaultRecord, KernelFault

from .allocator import Allocator, MemoryStats
from .backend import Backend
from .device_array import DeviceArray
from .errors import DriverError
from .launch import LaunchResult, normalize_dims
from .module import Kernel, Module, pack_args

BACKENDS = ("iss", "rtl", "cuda")
_NOT_DEVICE_KINDS = {"U": "text", "S": "byte strings", "M": "dates", "m": "time spans"}
"""NumPy dtype kinds refused in device memory (a kernel knows numbers only)."""
_MASK32 = 0xFFFF_FFFF
_CODE_ALIGN = 64  # module code bases in instruction memory
_HEAP_ALIGN = 256


def make_backend(name: str, config: GpuConfig, **options: Any) -> Backend:
    """Instantiate backend ``name``; :class:`DriverError` if it is unknown or unavailable,
    or if an option is not one of its constructor's."""
    modules = {"iss": ("backend_iss", "IssBackend"), "rtl": ("backend_rtl", "RtlBackend"),
               "cuda": ("backend_cuda", "CudaBackend")}
    if not isinstance(name, str):
        raise DriverError(f"backend must be a name ({', '.join(BACKENDS)}) or a Backend, "
                          f"not {type(name).__name__}")
    if name not in modules:
        raise DriverError(f"unknown backend '{name}' (backends: {', '.join(BACKENDS)})")
    mod_name, cls_name = modules[name]
    full = f"simtgpu.driver_model.{mod_name}"
    try:
        cls = getattr(importlib.import_module(full), cls_name)
    except ModuleNotFoundError as e:
        if e.name == full:
            raise DriverError(f"the '{name}' backend is not available in this installation "
                              f"({full} is missing)") from None
        raise DriverError(f"the '{name}' backend is not available: {e}") from None
    except (ImportError, AttributeError) as e:
        raise DriverError(f"the '{name}' backend is not available: {e}") from None
    accepted = inspect.signature(cls.__init__).parameters
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        known = [n for n in accepted if n not in ("self", "config")]
        raise DriverError(f"the '{name}' backend has no option(s) {', '.join(unknown)} "
                          f"(options: {', '.join(known) or 'none'})")
    try:
        return cls(config, **options)
    except DriverError:
        raise
    except (OSError, RuntimeError) as e:
        raise DriverError(f"the '{name}' backend could not start: {e}") from None


class _TraceFile:
    """A trace file that remembers its first write error instead of raising it inside the
    simulator (a full disk must not leave a launch half-run). ``stream``: the caller's own
    open text file, written but not closed here."""

    def __init__(self, path: str | os.PathLike[str], stream: Any = None):
        self.name = str(path)
        self.owned = stream is None
        # closed by close(), which never raises
        self.stream = open(path, "w") if stream is None else stream  # noqa: SIM115
        self.error: str | None = None

    def write(self, text: str) -> int:
        if self.error is None:
            try:
                return self.stream.write(text)
            except (OSError, ValueError) as e:  # (ValueError: a file closed meanwhile)
                self.error = getattr(e, "strerror", None) or str(e)
        return 0

    def close(self) -> None:
        if not self.owned:
            return
        try:
            self.stream.close()
        except OSError as e:
            self.error = self.error or e.strerror or str(e)


def _trace_stream(trace: Any) -> _TraceFile:
    """The caller's open text file as a trace sink; DriverError when it is closed or read-only
    (found before the launch, not by the simulator's first write)."""
    name = str(getattr(trace, "name", type(trace).__name__))
    if getattr(trace, "closed", False) is True:
        raise DriverError(f"launch(trace=...): the file {name} is closed")
    writable = getattr(trace, "writable", None)
    if callable(writable) and not writable():
        raise DriverError(f"launch(trace=...): the file {name} is not open for writing")
    return _TraceFile(name, trace)


def _locked(method):
    """Run a public method of :class:`Device` under the device's lock, on an open device:
    one device may be used from several threads (as a CUDA context may), and a closed one
    refuses everything."""

    @functools.wraps(method)
    def run(self: Device, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            if self._closed:
                raise DriverError(f"{method.__name__}: the device is closed")
            return method(self, *args, **kwargs)

    return run


def _shape(shape: Any, what: str) -> tuple[int, ...]:
    """A shape from an int or a sequence of ints; DriverError for anything else."""
    dims = (shape,) if isinstance(shape, (int, np.integer)) else shape
    if isinstance(dims, (str, bytes)) or not hasattr(dims, "__iter__"):
        raise DriverError(f"{what}: a shape is an int or a tuple of ints, not {shape!r}")
    dims = tuple(dims)
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dims):
        raise DriverError(f"{what}: a shape is an int or a tuple of ints, not {shape!r}")
    if any(d < 0 for d in dims):
        raise DriverError(f"{what}: negative dimension in shape {dims}")
    return tuple(int(d) for d in dims)


class Device:
    """One GPU: a backend of a named configuration, its memory and its command queue.

    Parameters
    ----------
    backend:
        ``"iss"`` (golden simulator), ``"rtl"`` (Verilator) or ``"cuda"``; or a
        :class:`Backend` instance.
    config:
        A configuration name (``tiny``, ``small``, ``full``) or a :class:`GpuConfig`;
        default ``small`` (with a Backend instance: the backend's own).
    queue_entries:
        Records in the command ring (a power of two).
    backend_options:
        Passed to the backend's constructor (the ISS takes ``instruction_budget``).
    """

    def __init__(self, backend: str | Backend = "iss", config: str | GpuConfig | None = None, *,
                 queue_entries: int = cq.QUEUE_ENTRIES, **backend_options: Any):
        self._lock = threading.RLock()
        self._closed = False
        self._unreferenced: list[int] = []  # buffers dropped without free(), to return
        try:
            wanted = get_config("small" if config is None else config)
        except ConfigError as e:
            raise DriverError(str(e)) from None
        if isinstance(backend, Backend):
            self.backend = backend
            self.config = backend.config
            if config is not None and wanted != backend.config:
                raise DriverError(f"configuration {wanted.name!r} does not match "
                                  f"the backend's {backend.config.name!r}")
        else:
            self.config = wanted
            self.backend = make_backend(backend, self.config, **backend_options)
        if isinstance(queue_entries, bool) or not isinstance(queue_entries, (int, np.integer)) \
                or not (2 <= queue_entries <= cq.MAX_QUEUE_ENTRIES
                        and queue_entries & (queue_entries - 1) == 0):
            raise DriverError(f"queue_entries must be a power of two from 2 to "
                              f"{cq.MAX_QUEUE_ENTRIES}, not {queue_entries!r}")
        cfg = self.config
        self._heap = Allocator(GLOBAL_NULL_GUARD, cfg.memory_bytes - GLOBAL_NULL_GUARD,
                               _HEAP_ALIGN, "device memory")
        self._imem = Allocator(0, cfg.imem_bytes, _CODE_ALIGN, "instruction memory")
        self.queue_entries = queue_entries
        self.queue_base = self.fence_addr = 0
        if self.backend.command_queue:
            self._probe()
            # The ring and the fence word are the driver's own allocations, made first.
            self.queue_base = self._heap.alloc(queue_entries * cq.RECORD_BYTES)
            self.fence_addr = self._heap.alloc(4)
            self.backend.write(self.queue_base, bytes(queue_entries * cq.RECORD_BYTES))
            self.backend.write(self.fence_addr, bytes(4))
            self.backend.mmio_write(Mmio.QUEUE_BASE, self.queue_base)
            self.backend.mmio_write(Mmio.QUEUE_ENTRIES, queue_entries)
            self.backend.mmio_write(Mmio.FENCE_ADDR, self.fence_addr)
        self._tail = 0
        self._last_fence = 0  # last fence value issued
        self._done_fence = 0  # last fence value known complete
        # fence -> (kernel, param block, local area)
        self._inflight: dict[int, tuple[str, int, int]] = {}
        self._modules: list[Module] = []
        # Live buffers by address, so freeing a buffer by its address marks the buffer freed.
        self._arrays: weakref.WeakValueDictionary[int, DeviceArray] = \
            weakref.WeakValueDictionary()

    def _probe(self) -> None:
        """Check that the backend is the device and build we think it is."""
        b = self.backend
        ident = b.mmio_read(Mmio.ID)
        if ident != cq.DEVICE_ID:
            raise DriverError(f"backend {b.name}: ID register reads {ident:#010x}, "
                              f"expected {cq.DEVICE_ID:#010x}")
        major = b.mmio_read(Mmio.VERSION) >> 16
        if major != cq.VERSION_MAJOR:
            raise DriverError(f"backend {b.name}: host interface version {major}.x, this "
                              f"driver speaks {cq.VERSION_MAJOR}.x")
        caps = {"cores": Mmio.CAP_CORES, "warps_per_core": Mmio.CAP_WARPS,
                "lanes": Mmio.CAP_LANES, "memory_bytes": Mmio.CAP_MEM_BYTES}
        for field, reg in caps.items():
            have, want = b.mmio_read(reg), getattr(self.config, field)
            if have != want:
                raise DriverError(f"backend {b.name}: built with {field}={have} but the "
                                  f"configuration '{self.config.name}' says {want}")

    def __repr__(self) -> str:
        return f"Device(backend={self.backend.name!r}, config={self.config.name!r})"

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the backend; the device refuses every later call (closing twice is
        allowed)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self.backend.close()

    # -- memory ----------------------------------------------------------------------------
    @_locked
    def empty(self, shape: int | tuple[int, ...], dtype: Any = np.float32) -> DeviceArray:
        """An uninitialised buffer (its contents are whatever the memory held). A buffer
        dropped without :meth:`free` is returned to the device later, as CUDA wrappers do."""
        shape = _shape(shape, "empty()")
        try:
            dt = np.dtype(dtype)
        except (TypeError, ValueError):
            raise DriverError(f"empty(): {dtype!r} is not a NumPy dtype") from None
        if dt.hasobject or dt.itemsize == 0 or dt.kind in _NOT_DEVICE_KINDS:
            raise DriverError(f"empty(): arrays of {dt} cannot live in device memory")
        nbytes = math.prod(shape) * dt.itemsize
        if nbytes > self.config.memory_bytes:
            raise DriverError(f"empty(): {nbytes} bytes for shape {shape} of {dt}; the device "
                              f"has {self.config.memory_bytes}")
        self._return_unreferenced()
        arr = DeviceArray(self, self._heap.alloc(nbytes), shape, dt)
        self._arrays[arr._ptr] = arr
        arr._finalizer = weakref.finalize(arr, self._unreferenced.append, arr._ptr)
        return arr

    def _return_unreferenced(self) -> None:
        """Free the buffers whose DeviceArray was garbage-collected (after the device is done
        with them: a queued kernel may still use one)."""
        if self._unreferenced:
            self.synchronize()
            while self._unreferenced:
                self._heap.free(self._unreferenced.pop())

    @_locked
    def zeros(self, shape: int | tuple[int, ...], dtype: Any = np.float32) -> DeviceArray:
        arr = self.empty(shape, dtype)
        self.synchronize()
        self.backend.write(arr.ptr, bytes(arr.nbytes))
        return arr

    @_locked
    def to_device(self, array: Any) -> DeviceArray:
        """Copy a NumPy array (or anything ``np.asarray`` accepts) into a new buffer."""
        try:
            src = np.asarray(array)
        except (TypeError, ValueError) as e:
            raise DriverError(f"to_device(): not an array: {e}") from None
        if src.dtype == object:
            raise DriverError("to_device(): arrays of Python objects cannot be copied")
        if src.dtype.kind in _NOT_DEVICE_KINDS:
            kind = _NOT_DEVICE_KINDS[src.dtype.kind]
            raise DriverError(f"to_device(): {src.dtype} values ({kind}) are nothing a kernel "
                              "can use; give numbers")
        src = np.ascontiguousarray(src, dtype=src.dtype.newbyteorder("<"))
        arr = self.empty(src.shape, src.dtype)
        self.synchronize()
        self.backend.write(arr.ptr, src.tobytes())
        return arr

    @_locked
    def free(self, buffer: DeviceArray | int) -> None:
        """Free a buffer (or the address an allocation returned). Waits for the device first,
        as cudaFree does, so no queued kernel loses its memory."""
        if isinstance(buffer, bool) or not isinstance(buffer, (DeviceArray, int, np.integer)):
            raise DriverError(f"free() takes a DeviceArray or an address, not "
                              f"{type(buffer).__name__}")
        if isinstance(buffer, DeviceArray):
            if buffer.device is not self:
                raise DriverError(f"free of {buffer!r}, which belongs to another device")
            if buffer.freed:
                raise DriverError(f"double free of {buffer!r}")
            ptr = buffer._ptr
        else:
            ptr = int(buffer)
        owned = {m.data_base for m in self._modules}
        if self.backend.command_queue:
            owned |= {self.queue_base, self.fence_addr}
        if ptr in owned:
            raise DriverError(f"free of {ptr:#x}, which the driver owns (command queue, fence "
                              "or a module's data section)")
        self.synchronize()
        self._heap.free(ptr)
        arr = self._arrays.pop(ptr, None)
        if arr is not None:
            arr.freed = True
            if arr._finalizer is not None:
                arr._finalizer.detach()

    @_locked
    def memory_stats(self) -> MemoryStats:
        """Device-memory usage, counting the driver's own blocks (ring, fence, module data)."""
        return self._heap.stats()

    @_locked
    def imem_stats(self) -> MemoryStats:
        return self._imem.stats()

    # -- modules ---------------------------------------------------------------------------
    @_locked
    def load_module(self, source: str | os.PathLike[str] | ObjectFile | bytes) -> Module:
        """Load a module: an :class:`ObjectFile`, ``.sgo`` bytes, a path to a ``.s`` (assembled
        here) or ``.sgo`` file, or assembly source text (a string with a newline)."""
        self._need_queue("load_module")
        if not isinstance(source, (str, os.PathLike, ObjectFile, bytes, bytearray)):
            raise DriverError("load_module() takes a path, assembly text, .sgo bytes or an "
                              f"ObjectFile, not {type(source).__name__}")
        if isinstance(source, ObjectFile):
            obj, name = source, "<object>"
        elif isinstance(source, (bytes, bytearray)):
            obj, name = ObjectFile.from_bytes(bytes(source)), "<bytes>"
        elif isinstance(source, str) and "\n" in source:
            obj, name = assemble(source, "<source>"), "<source>"
        else:
            if not str(source):
                raise DriverError("load_module: the path is empty")
            path = Path(source)
            name = str(path)
            if path.suffix not in (".s", ".sgo"):
                raise DriverError(f"load_module: {path}: expected a .s or .sgo file")
            if not path.is_file():
                raise DriverError(f"load_module: {path}: {_not_a_file(path)}")
            if path.suffix == ".s":
                obj = assemble_file(path)
            elif path.suffix == ".sgo":
                obj = ObjectFile.from_file(path)
            else:
                raise DriverError(f"load_module: {path}: expected a .s or .sgo file")
        if not obj.code:
            raise DriverError(f"load_module: {name} has no code")
        data_base = None
        if obj.data:
            data_base = self._heap.alloc(len(obj.data), align=obj.data_align)
        try:
            code = obj.relocate(data_base if data_base is not None else GLOBAL_NULL_GUARD)
            code_base = self._imem.alloc(len(code))
        except Exception:
            if data_base is not None:
                self._heap.free(data_base)
            raise
        self.synchronize()
        if data_base is not None:
            self.backend.write(data_base, obj.data)
        self.backend.load_code(code_base, code)
        module = Module(self, obj, code_base, data_base, name)
        self._modules.append(module)
        return module

    def _unload(self, module: Module) -> None:
        self.synchronize()
        self._modules.remove(module)
        self._imem.free(module.code_base)
        if module.data_base is not None:
            self._heap.free(module.data_base)

    # -- launches --------------------------------------------------------------------------
    @_locked
    def launch(self, kernel: Kernel, grid: Any = 1, block: Any = 1, args: Any = (),
               shared_bytes: int = 0, trace: Any = None, local_bytes: int = 0) -> LaunchResult:
        """Launch ``kernel`` and wait for it; returns what it did (``local_bytes``: as
        :meth:`launch_async`). A kernel fault raises
        :class:`simtgpu.sim.KernelFault` with the device's fault record. ``trace`` is handed
        to the backend's retire trace: a path or a writable text file (the ISS writes JSON
        lines, docs/trace-format.md)."""
        self._need_queue("launch")
        if trace is not None and not isinstance(trace, (str, os.PathLike)) \
                and not callable(getattr(trace, "write", None)):
            raise DriverError(f"launch(trace=...) takes a path or a writable text file, not "
                              f"{type(trace).__name__}")
        self.synchronize()
        before = self._read_counters()
        before_cores = self._read_core_counters()
        sink = None
        with contextlib.ExitStack() as stack:
            if isinstance(trace, (str, os.PathLike)):
                try:
                    sink = _TraceFile(trace)
                except OSError as e:
                    raise DriverError(f"trace file {trace}: {e.strerror}") from None
                stack.callback(sink.close)
                trace = sink
            elif trace is not None:
                sink = trace = _trace_stream(trace)
            self.backend.set_trace(trace)
            stack.callback(self.backend.set_trace, None)
            t0 = time.perf_counter()
            fence = self.launch_async(kernel, grid, block, args, shared_bytes, local_bytes)
            self.synchronize()
            wall = time.perf_counter() - t0
        if sink is not None and sink.error is not None:
            raise DriverError(f"trace file {sink.name}: {sink.error} (the launch ran; its "
                              "trace is incomplete)")
        after = self._read_counters()
        delta = _counter_deltas(after, before)
        per_core = None
        if before_cores is not None:
            per_core = [_counter_deltas(a, b)
                        for a, b in zip(self._read_core_counters(), before_cores, strict=True)]
        cycles = ((after["cycles_hi"] << 32 | after["cycles_lo"])
                  - (before["cycles_hi"] << 32 | before["cycles_lo"]))
        details = self.backend.command_details(fence)
        return LaunchResult(
            kernel=kernel.name, grid=normalize_dims(grid, "grid"),
            block=normalize_dims(block, "block"), backend=self.backend.name, fence=fence,
            wall_s=wall, instructions=delta["instructions"],
            thread_instructions=delta["thread_instructions"], cycles=cycles,
            divergence_events=delta["divergence_events"],
            per_opcode=dict(details.get("per_opcode", {})), counters=delta, details=details,
            per_core=per_core)

    @_locked
    def launch_async(self, kernel: Kernel, grid: Any = 1, block: Any = 1, args: Any = (),
                     shared_bytes: int = 0, local_bytes: int = 0) -> int:
        """Queue a launch and ring the doorbell without waiting; returns its fence value.
        Arguments are checked here: any misuse raises :class:`DriverError` and queues
        nothing. A kernel whose last parameter is the hidden ``__local``
        (:data:`simtgpu.isa.abi.LOCAL_PARAM`) gets a local area of ``threads x local_bytes``
        in device memory, allocated here and freed when the launch completes; ``args`` leave
        that parameter out."""
        if not isinstance(kernel, Kernel):
            raise DriverError(f"launch expects a Kernel (from Module.kernel), not "
                              f"{type(kernel).__name__}")
        if kernel.module.device is not self:
            raise DriverError(f"kernel {kernel.name} was loaded on another device")
        kernel.module._check_loaded()
        self._need_queue("launch")
        g = normalize_dims(grid, "grid")
        b = normalize_dims(block, "block")
        if not isinstance(shared_bytes, (int, np.integer)) or shared_bytes < 0 \
                or shared_bytes % 4:
            raise DriverError(f"launch of {kernel.name}: shared_bytes must be a non-negative "
                              f"multiple of 4, not {shared_bytes!r}")
        local = _local_bytes(kernel, local_bytes)
        if local:
            args = (*(args if isinstance(args, (tuple, list)) else (args,)), 0)
        params = bytearray(pack_args(kernel, args, self))
        module = kernel.module
        record = Command(CommandOp.LAUNCH, 0, kernel.entry_pc, g, b, 0, len(params),
                         kernel.info.shared_bytes + int(shared_bytes), kernel.info.regs,
                         module.code_base, module.code_base + len(module.obj.code))
        # The device's own rules, before anything is allocated or queued. The parameter
        # block's address comes from the heap below, which aligns it to 256 bytes.
        problem = cq.launch_problem(record, self.config, self._code_limit())
        if problem is not None:
            raise DriverError(f"launch of {kernel.name}: {problem}")
        local_addr = 0
        if local:
            area = math.prod(g) * math.prod(b) * local
            if area > self.config.memory_bytes - GLOBAL_NULL_GUARD:
                raise DriverError(
                    f"launch of {kernel.name}: its local memory ({math.prod(g) * math.prod(b)} "
                    f"threads x {local} bytes = {area} bytes) exceeds the device memory "
                    f"({self.config.memory_bytes} bytes): launch fewer blocks")
        self._wait_for_slot()
        if local:
            try:
                local_addr = self._heap.alloc(area)
            except DriverError as e:
                raise DriverError(f"launch of {kernel.name}: local memory: {e}") from None
            params[-4:] = local_addr.to_bytes(4, "little")
        try:
            param_addr = self._heap.alloc(len(params)) if params else 0
        except DriverError:
            if local_addr:
                self._heap.free(local_addr)
            raise
        if params:
            self.backend.write(param_addr, bytes(params))
        fence = self._next_fence()
        cmd = dataclasses.replace(record, fence=fence, param_addr=param_addr)
        self._inflight[fence] = (kernel.signature, param_addr, local_addr)
        self._submit(cmd)
        return fence

    @_locked
    def fence(self) -> int:
        """Queue a FENCE-only command; returns its value."""
        self._need_queue("fence")
        self._wait_for_slot()
        value = self._next_fence()
        self._inflight[value] = ("fence", 0, 0)
        self._submit(Command(CommandOp.FENCE, value))
        return value

    def _next_fence(self) -> int:
        value = (self._last_fence + 1) & _MASK32 or 1  # 0 is the fence word's reset value
        self._last_fence = value
        return value

    def _need_queue(self, what: str) -> None:
        if not self.backend.command_queue:
            raise DriverError(f"{what}: the {self.backend.name} backend has no command queue "
                              "for ISA kernels (it launches through its own methods)")

    def _wait_for_slot(self) -> None:
        """When the ring is full, let the device drain it (a real driver would poll HEAD)."""
        if cq.next_index(self._tail, self.queue_entries) == self.backend.mmio_read(Mmio.HEAD):
            self.synchronize()

    def _submit(self, cmd: Command) -> None:
        nxt = cq.next_index(self._tail, self.queue_entries)
        self.backend.write(cq.record_address(self.queue_base, self._tail), cq.pack(cmd))
        self._tail = nxt
        self.backend.mmio_write(Mmio.DOORBELL, self._tail)

    @_locked
    def synchronize(self) -> None:
        """Wait until every queued command has completed. A fault raises
        :class:`KernelFault` (and discards the commands queued behind it)."""
        if not self.backend.command_queue:
            self.backend.run_until_idle()
            return
        if self._done_fence == self._last_fence:
            return
        self.backend.run_until_idle()
        status = self.backend.mmio_read(Mmio.STATUS)
        if status & Status.FAULT:
            self._raise_fault(status)
        value = int.from_bytes(self.backend.read(self.fence_addr, 4), "little")
        if status & Status.BUSY or value != self._last_fence:
            raise DriverError(f"backend {self.backend.name} went idle with fence {value}, "
                              f"expected {self._last_fence} (status {status:#x})")
        self._retire_all()

    def _retire_all(self) -> None:
        for _, param_addr, local_addr in self._inflight.values():
            for addr in (param_addr, local_addr):
                if addr:
                    self._heap.free(addr)
        self._inflight.clear()
        self._done_fence = self._last_fence

    def _raise_fault(self, status: int) -> None:
        b = self.backend
        head = b.mmio_read(Mmio.HEAD)
        raw = b.read(cq.record_address(self.queue_base, head), cq.RECORD_BYTES)
        fence = int.from_bytes(raw[4:8], "little")  # w1, readable even in a malformed record
        what = self._inflight.get(fence, ("an unknown command",))[0]
        discarded = (self._tail - head - 1) % self.queue_entries
        regs = {r: b.mmio_read(r) for r in (
            Mmio.FAULT_CAUSE, Mmio.FAULT_PC, Mmio.FAULT_CORE, Mmio.FAULT_WARP,
            Mmio.FAULT_LANES, Mmio.FAULT_BLOCK_X, Mmio.FAULT_BLOCK_Y, Mmio.FAULT_BLOCK_Z,
            Mmio.FAULT_INSTR)}
        detail = b.fault_detail()
        b.mmio_write(Mmio.CONTROL, Control.CLEAR_FAULT)
        self._retire_all()
        later = f"; {discarded} command(s) queued after it were discarded" if discarded else ""
        if status & Status.BAD_COMMAND:
            why = f": {detail}" if detail else ""
            raise DriverError(f"the device refused the command for {what} (record at "
                              f"{regs[Mmio.FAULT_PC]:#x}){why}{later}")
        pc = regs[Mmio.FAULT_PC]
        try:
            cause = FaultCause(regs[Mmio.FAULT_CAUSE])
        except ValueError:
            raise DriverError(f"backend {b.name} reported a fault with unknown cause "
                              f"{regs[Mmio.FAULT_CAUSE]} at pc {pc:#x} in {what}") from None
        named = FaultRecord.names_an_instruction(cause, regs[Mmio.FAULT_LANES])
        record = FaultRecord(
            cause=cause,
            block=(regs[Mmio.FAULT_BLOCK_X], regs[Mmio.FAULT_BLOCK_Y], regs[Mmio.FAULT_BLOCK_Z]),
            warp=regs[Mmio.FAULT_WARP], lane_mask=regs[Mmio.FAULT_LANES], pc=pc,
            instruction=(_disassemble(regs[Mmio.FAULT_INSTR], pc, self._module_at(pc))
                         if named else ""),
            detail="; ".join(s for s in (f"in {what}", detail, later.lstrip("; ")) if s),
            core=regs[Mmio.FAULT_CORE])
        raise KernelFault(record)

    def _code_limit(self) -> int:
        """One past the last instruction-memory byte of the loaded modules."""
        return max((m.code_base + len(m.obj.code) for m in self._modules), default=0)

    def _module_at(self, pc: int) -> Module | None:
        for m in self._modules:
            if m.code_base <= pc < m.code_base + len(m.obj.code):
                return m
        return None

    def _read_counters(self) -> dict[str, int]:
        return {m.name.lower(): self.backend.mmio_read(m) for m in cq.PERF_COUNTERS}

    def _read_core_counters(self) -> list[dict[str, int]] | None:
        """Every core's counter window, or None where the backend has no per-core counters."""
        if not self.backend.per_core_counters:
            return None
        read = self.backend.mmio_read
        return [{c.name.lower(): read(cq.core_counter_offset(i, c)) for c in cq.CoreCounter}
                for i in range(self.config.cores)]


_MAX_NAMES = frozenset(c.name.lower() for c in cq.MAX_COUNTERS)


def _counter_deltas(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    """What a launch added to each counter (modulo 2**32); a maximum counter (zeroed when the
    launch started) is its value after the launch."""
    return {k: after[k] if k in _MAX_NAMES else (after[k] - before[k]) & _MASK32
            for k in after}


def _disassemble(word: int, pc: int, module: Module | None) -> str:
    """The faulting instruction's text, with its PC relative to its module (as the assembler
    listing shows it), or empty when the PC is outside every loaded module."""
    if module is None:
        return ""
    from simtgpu.assembler import disassemble_word

    try:
        return str(disassemble_word(word, pc - module.code_base))
    except Exception:  # a bad word is the fault being reported, not a second error
        return f".word {word:#010x}"


def _not_a_file(path: Path) -> str:
    """Why ``path`` (not a regular file) cannot be read as one."""
    if path.is_dir():
        return "is a directory, not a file"
    if path.exists():
        return "is not a regular file (a device or a pipe)"
    return "no such file"


def _local_bytes(kernel: Kernel, local_bytes: Any) -> int:
    """Per-thread local bytes of a launch, checked against the kernel's hidden parameter."""
    if isinstance(local_bytes, bool) or not isinstance(local_bytes, (int, np.integer)) \
            or local_bytes < 0 or local_bytes % 4:
        raise DriverError(f"launch of {kernel.name}: local_bytes must be a non-negative "
                          f"multiple of 4, not {local_bytes!r}")
    names = [p.name for p in kernel.info.params]
    if LOCAL_PARAM in names[:-1]:
        raise DriverError(f"kernel {kernel.name}: the hidden parameter {LOCAL_PARAM} must be "
                          "its last parameter")
    has = bool(names) and names[-1] == LOCAL_PARAM
    if has and not local_bytes:
        raise DriverError(f"launch of {kernel.name}: the kernel uses local memory (parameter "
                          f"{LOCAL_PARAM}); give its bytes per thread (local_bytes=)")
    if local_bytes and not has:
        raise DriverError(f"launch of {kernel.name}: local_bytes={local_bytes} given, but the "
                          f"kernel has no {LOCAL_PARAM} parameter to receive the area")
    return int(local_bytes)
