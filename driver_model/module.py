"""Loaded modules and their kernels; packing a launch's arguments into a parameter block."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from simtgpu.assembler import KernelInfo, ObjectFile

from .device_array import DeviceArray
from .errors import DriverError

if TYPE_CHECKING:
    from .device import Device


class Module:
    """An object file placed on a device: code in instruction memory at ``code_base``, the
    data section in device memory at ``data_base`` (relocations applied for that address)."""

    def __init__(self, device: Device, obj: ObjectFile, code_base: int, data_base: int | None,
                 name: str):
        self.device = device
        self.obj = obj
        self.code_base = code_base
        self.data_base = data_base
        self.name = name
        self.loaded = True

    @property
    def kernel_names(self) -> list[str]:
        return sorted(self.obj.kernels)

    def kernel(self, name: str) -> Kernel:
        """The kernel called ``name``; :class:`DriverError` lists the module's kernels if absent."""
        self._check_loaded()
        if not isinstance(name, str):
            raise DriverError(f"kernel() takes a kernel name (a str), not "
                              f"{type(name).__name__}; module {self.name} has "
                              f"{', '.join(self.kernel_names) or 'no kernels'}")
        info = self.obj.kernels.get(name)
        if info is None:
            have = ", ".join(self.kernel_names) or "none"
            raise DriverError(f"module {self.name} has no kernel '{name}' (kernels: {have})")
        return Kernel(self, info)

    def unload(self) -> None:
        """Free the module's instruction and data memory; its kernels can no longer launch."""
        self._check_loaded()
        self.device._unload(self)
        self.loaded = False

    def _check_loaded(self) -> None:
        if not self.loaded:
            raise DriverError(f"module {self.name} has been unloaded")

    def __repr__(self) -> str:
        return (f"Module({self.name}, code_base={self.code_base:#x}, "
                f"kernels={self.kernel_names})")


@dataclass(frozen=True)
class Kernel:
    """A kernel of a loaded module: where it starts and what it takes."""

    module: Module
    info: KernelInfo

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def entry_pc(self) -> int:
        """Absolute instruction-memory byte address of the first instruction."""
        return self.module.code_base + self.info.entry

    @property
    def signature(self) -> str:
        params = ", ".join(f"{p.name}: {p.type}" for p in self.info.params)
        return f"{self.info.name}({params})"

    def __repr__(self) -> str:
        return f"Kernel({self.signature} at {self.entry_pc:#x})"


_I32 = (-(1 << 31), (1 << 31) - 1)
_U32 = (0, (1 << 32) - 1)


def pack_args(kernel: Kernel, args: tuple[Any, ...] | list[Any], device: Device) -> bytes:
    """The parameter block for ``args``: one little-endian word per parameter, in order.

    ``ptr`` takes a :class:`DeviceArray` of this device or an int address; ``i32``/``u32``
    take Python or NumPy integers in range; ``f32`` takes a real number. Anything else raises
    :class:`DriverError` naming the parameter and the kernel's signature.
    """
    params = kernel.info.params
    if not isinstance(args, (tuple, list)):
        args = (args,)
    if len(args) != len(params):
        raise DriverError(f"{kernel.name} takes {len(params)} argument(s), {len(args)} given; "
                          f"signature: {kernel.signature}")
    words = bytearray()
    for p, value in zip(params, args, strict=True):
        def bad(why: str, p=p, value=value) -> DriverError:
            shown = repr(value)
            if len(shown) > 60:  # (a 600-digit integer says nothing more than its start)
                shown = f"{shown[:40]}...{shown[-8:]}"
            return DriverError(f"argument '{p.name}' of {kernel.signature}: {why} "
                               f"(got {type(value).__name__} {shown})")

        if p.type == "ptr":
            if isinstance(value, DeviceArray):
                if value.device is not device:
                    raise bad("the buffer belongs to another device")
                if value.freed:
                    raise bad("use after free: the buffer has been freed")
                value = value.ptr
            elif not _is_int(value):
                raise bad("expects a device pointer (DeviceArray or int address)")
            lo, hi = _U32
            if not lo <= int(value) <= hi:
                raise bad("pointer does not fit in 32 bits")
            words += struct.pack("<I", int(value))
        elif p.type in ("i32", "u32"):
            if not _is_int(value):
                raise bad(f"expects an integer for {p.type}")
            lo, hi = _I32 if p.type == "i32" else _U32
            if not lo <= int(value) <= hi:
                raise bad(f"out of range for {p.type} [{lo}, {hi}]")
            words += struct.pack("<i" if p.type == "i32" else "<I", int(value))
        elif p.type == "f32":
            if not (_is_int(value) or isinstance(value, (float, np.floating))):
                raise bad("expects a real number for f32")
            try:
                f = float(value)
            except OverflowError:  # an int beyond any double
                raise bad("out of range for f32") from None
            finite = _is_int(value) or bool(np.isfinite(value))  # (a long double may not be)
            if finite and not (math.isfinite(f) and abs(f) <= float(np.finfo(np.float32).max)):
                raise bad("out of range for f32")
            words += np.float32(f).tobytes()
        else:  # a type the object format knows but this driver does not
            raise bad(f"unsupported parameter type {p.type}")
    return bytes(words)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
