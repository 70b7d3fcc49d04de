"""The kernel object file (.sgo): what the assembler produces and the driver loads.

An :class:`ObjectFile` holds the code (little-endian instruction words; a PC is a byte
offset into it), an optional data section that the loader places in global memory, the
kernels' metadata, symbols and the relocations that tie code to the data section's final
address. :meth:`ObjectFile.to_bytes` / :meth:`ObjectFile.from_bytes` implement the binary
format described, field by field, in docs/object-format.md. Loading validates every count,
offset and length so that a damaged file is reported, never half-used.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from simtgpu.errors import SimtgpuError
from simtgpu.isa import NUM_REGS, PARAM_TYPES, EncodingError, Kind, decode
from simtgpu.isa.abi import MAX_PARAMS

from .inputs import read_regular_file

MAGIC = b"SGPU"
FORMAT_VERSION = 1

# Header: magic, version, flags, file size, data alignment, then (offset, size-or-count)
# pairs for code, data, strings, symbols, kernels, parameters and relocations.
HEADER = struct.Struct("<4sHHII" + "II" * 7)
SYMBOL = struct.Struct("<IB3xI")  # name, section, offset
KERNEL = struct.Struct("<IIIIIII")  # name, entry, end, shared_bytes, regs, first_param, n
PARAM = struct.Struct("<IB3xI")  # name, type, offset
RELOC = struct.Struct("<IB3xI")  # code_offset, kind, data_offset

SECTIONS = ("code", "data")
PARAM_TYPE_CODES = tuple(PARAM_TYPES)  # ptr, i32, u32, f32: their index is the stored code
RELOC_KINDS = ("hi16", "lo16")
MAX_SECTION_BYTES = 64 << 20
"""Largest code or data section the assembler writes: the device memory of the largest named
configuration (sizes are 32-bit in the format, but the sections are held in memory whole)."""
MAX_OBJECT_BYTES = 4 * MAX_SECTION_BYTES
"""Largest object file :meth:`ObjectFile.from_file` reads: both sections at their largest and
as much again for the tables (millions of symbols). Anything larger is not an object file the
assembler wrote, and is refused before it is read into memory."""


class ObjectFormatError(SimtgpuError):
    """An object file that cannot be loaded (bad magic, version, truncation, bad offset)."""


@dataclass(frozen=True)
class ParamInfo:
    """One kernel parameter: a 32-bit word at byte ``offset`` (= 4 * index) of the block."""

    name: str
    type: str  # a key of isa.abi.PARAM_TYPES
    offset: int


@dataclass(frozen=True)
class KernelInfo:
    """A kernel: its code is ``code[entry:end]``; execution starts at ``entry``."""

    name: str
    entry: int
    end: int
    params: list[ParamInfo]
    shared_bytes: int
    regs: int


@dataclass(frozen=True)
class Symbol:
    name: str
    section: str  # "code" or "data"
    offset: int


@dataclass(frozen=True)
class Relocation:
    """Patch the imm16 of the word at ``code_offset`` with one half of the absolute address
    ``data_base + data_offset``: ``hi16`` takes bits 31:16, ``lo16`` bits 15:0."""

    code_offset: int
    kind: str  # "hi16" or "lo16"
    data_offset: int


@dataclass
class ObjectFile:
    code: bytes = b""
    data: bytes = b""
    data_align: int = 4
    kernels: dict[str, KernelInfo] = field(default_factory=dict)
    symbols: dict[str, Symbol] = field(default_factory=dict)
    relocations: list[Relocation] = field(default_factory=list)

    # -- loading helpers -----------------------------------------------------------------
    def relocate(self, data_base: int) -> bytes:
        """The code with every relocation applied for a data section placed at ``data_base``."""
        if data_base % self.data_align:
            raise ObjectFormatError(
                f"data base 0x{data_base:x} is not aligned to {self.data_align} bytes")
        if data_base < 0 or data_base + len(self.data) > 1 << 32:
            raise ObjectFormatError(f"data base 0x{data_base:x} puts data outside 32 bits")
        code = bytearray(self.code)
        for r in self.relocations:
            addr = data_base + r.data_offset
            half = (addr >> 16) & 0xFFFF if r.kind == "hi16" else addr & 0xFFFF
            (word,) = struct.unpack_from("<I", code, r.code_offset)
            word = (word & 0x0000FFFF) | (half << 16)
            struct.pack_into("<I", code, r.code_offset, word)
        return bytes(code)

    def kernel(self, name: str) -> KernelInfo:
        """The kernel called ``name``, or an error listing the ones there are."""
        try:
            return self.kernels[name]
        except KeyError:
            have = ", ".join(sorted(self.kernels)) or "none"
            raise ObjectFormatError(f"no kernel named '{name}' (kernels: {have})") from None

    # -- serialisation -------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The file's bytes. Tables are written in one canonical order (symbols by section,
        offset and name; kernels by entry; relocations by code offset), so that equal objects
        are equal files whatever order they were built in."""
        strings = _StringTable()
        symtab = b"".join(
            SYMBOL.pack(strings.add(s.name), SECTIONS.index(s.section), s.offset)
            for s in sorted(self.symbols.values(),
                            key=lambda s: (SECTIONS.index(s.section), s.offset, s.name)))
        kerntab = bytearray()
        paramtab = bytearray()
        n_params = 0
        for k in sorted(self.kernels.values(), key=lambda k: k.entry):
            kerntab += KERNEL.pack(strings.add(k.name), k.entry, k.end, k.shared_bytes, k.regs,
                                   n_params, len(k.params))
            for p in k.params:
                paramtab += PARAM.pack(strings.add(p.name), PARAM_TYPE_CODES.index(p.type),
                                       p.offset)
            n_params += len(k.params)
        reltab = b"".join(RELOC.pack(r.code_offset, RELOC_KINDS.index(r.kind), r.data_offset)
                          for r in sorted(self.relocations, key=lambda r: r.code_offset))
        strtab = strings.blob()

        body = bytearray()
        entries: list[tuple[int, int]] = []
        for blob, count in ((self.code, len(self.code)), (self.data, len(self.data)),
                            (strtab, len(strtab)), (symtab, len(self.symbols)),
                            (bytes(kerntab), len(self.kernels)), (bytes(paramtab), n_params),
                            (reltab, len(self.relocations))):
            body += b"\0" * (-len(body) % 4)
            entries.append((HEADER.size + len(body), count))
            body += blob
        flat = [v for pair in entries for v in pair]
        header = HEADER.pack(MAGIC, FORMAT_VERSION, 0, HEADER.size + len(body), self.data_align,
                             *flat)
        return header + bytes(body)

    @classmethod
    def from_bytes(cls, blob: bytes, filename: str = "<bytes>") -> ObjectFile:
        return _Reader(bytes(blob), filename).read()

    @classmethod
    def from_file(cls, path: str | Path) -> ObjectFile:
        """Load the object file at ``path``: a regular file of at most
        :data:`MAX_OBJECT_BYTES` (a directory, device or pipe is refused unread)."""
        path = Path(path)
        try:
            blob = read_regular_file(path, ObjectFormatError, MAX_OBJECT_BYTES, "object file")
        except OSError as e:
            raise ObjectFormatError(f"{path}: cannot read: {e.strerror or e}") from None
        return cls.from_bytes(blob, str(path))

    def write(self, path: str | Path) -> None:
        Path(path).write_bytes(self.to_bytes())


def highest_register(code: bytes) -> int:
    """The highest general register any valid instruction in ``code`` names (0 if none).
    Each distinct word is decoded once (compiled code repeats its spill and address
    arithmetic words many times over)."""
    top = 0
    for word in set(w for (w,) in struct.iter_unpack("<I", code)):
        try:
            d = decode(word)
        except EncodingError:
            continue  # data words inside a kernel (.word) are not instructions
        for op in d.instr.operands:
            if op.kind in (Kind.REG, Kind.MEM, Kind.MEM_REG):
                top = max(top, getattr(d, op.fields[0]))
    return top


NAME = re.compile(r"[A-Za-z_.][A-Za-z0-9_.]*\Z")
"""What the assembler accepts as a symbol, kernel or parameter name; a loaded file's names
must be the same, so that its disassembly assembles again."""
MAX_SHARED_BYTES = (1 << 31) - 1
"""The largest ``.shared`` size the assembler accepts."""


class _StringTable:
    """NUL-terminated UTF-8 names; offset 0 holds the empty string."""

    def __init__(self) -> None:
        self._data = bytearray(b"\0")
        self._index: dict[str, int] = {"": 0}

    def add(self, s: str) -> int:
        if s not in self._index:
            self._index[s] = len(self._data)
            self._data += s.encode() + b"\0"
        return self._index[s]

    def blob(self) -> bytes:
        return bytes(self._data)


class _Reader:
    def __init__(self, blob: bytes, filename: str):
        self.blob = blob
        self.filename = filename

    def fail(self, msg: str) -> ObjectFormatError:
        return ObjectFormatError(f"{self.filename}: {msg}")

    def read(self) -> ObjectFile:
        b = self.blob
        if len(b) < 4 or b[:4] != MAGIC:
            raise self.fail(f"bad magic {b[:4]!r} (expected {MAGIC!r}): "
                            "not a simtgpu object file")
        if len(b) < 6:
            raise self.fail(f"truncated: {len(b)} bytes, the header needs {HEADER.size}")
        (version,) = struct.unpack_from("<H", b, 4)
        if version != FORMAT_VERSION:
            raise self.fail(f"unsupported object format version {version} "
                            f"(this tool reads version {FORMAT_VERSION})")
        if len(b) < HEADER.size:
            raise self.fail(f"truncated: {len(b)} bytes, the header needs {HEADER.size}")
        _, _, flags, size, data_align, *tables = HEADER.unpack_from(b)
        if flags:
            raise self.fail(f"unknown flags 0x{flags:04x} (none are defined)")
        if size != len(b):
            what = "truncated" if size > len(b) else "trailing bytes"
            raise self.fail(f"{what}: the header says {size} bytes, the file has {len(b)}")
        if data_align < 4 or data_align & (data_align - 1):
            raise self.fail(f"data alignment {data_align} is not a power of two >= 4")
        names = ("code", "data", "string table", "symbol table", "kernel table",
                 "parameter table", "relocation table")
        entry_sizes = (1, 1, 1, SYMBOL.size, KERNEL.size, PARAM.size, RELOC.size)
        spans = []
        for i, name in enumerate(names):
            off, count = tables[2 * i], tables[2 * i + 1]
            length = count * entry_sizes[i]
            if off < HEADER.size or off + length > len(b):
                raise self.fail(f"{name} at offset {off} with {length} bytes lies outside "
                                f"the file ({HEADER.size}..{len(b)})")
            spans.append((off, count, length))
        code = b[spans[0][0]:spans[0][0] + spans[0][2]]
        data = b[spans[1][0]:spans[1][0] + spans[1][2]]
        if len(code) % 4:
            raise self.fail(f"code size {len(code)} is not a multiple of 4")
        strtab = b[spans[2][0]:spans[2][0] + spans[2][2]]

        def string(off: int, what: str) -> str:
            if off >= len(strtab):
                raise self.fail(f"{what}: name offset {off} outside the string table "
                                f"({len(strtab)} bytes)")
            end = strtab.find(b"\0", off)
            if end < 0:
                raise self.fail(f"{what}: name at offset {off} is not NUL-terminated")
            try:
                name = strtab[off:end].decode()
            except UnicodeDecodeError:
                raise self.fail(f"{what}: name at offset {off} is not UTF-8") from None
            if not NAME.match(name):
                raise self.fail(f"{what}: {name[:40]!r} is not a name (letters, digits, '_' "
                                "and '.', not starting with a digit)")
            return name

        symbols: dict[str, Symbol] = {}
        for i in range(spans[3][1]):
            name_off, sec, off = SYMBOL.unpack_from(b, spans[3][0] + i * SYMBOL.size)
            name = string(name_off, f"symbol {i}")
            if sec >= len(SECTIONS):
                raise self.fail(f"symbol '{name}': unknown section {sec}")
            section = SECTIONS[sec]
            limit = len(code) if section == "code" else len(data)
            if off > limit or (section == "code" and off % 4):
                raise self.fail(f"symbol '{name}': offset {off} outside or misaligned in the "
                                f"{section} section ({limit} bytes)")
            if name in symbols:
                raise self.fail(f"symbol '{name}' defined twice")
            symbols[name] = Symbol(name, section, off)

        params: list[ParamInfo] = []
        for i in range(spans[5][1]):
            name_off, typ, off = PARAM.unpack_from(b, spans[5][0] + i * PARAM.size)
            name = string(name_off, f"parameter {i}")
            if typ >= len(PARAM_TYPE_CODES):
                raise self.fail(f"parameter '{name}': unknown type code {typ}")
            params.append(ParamInfo(name, PARAM_TYPE_CODES[typ], off))

        kernels: dict[str, KernelInfo] = {}
        for i in range(spans[4][1]):
            name_off, entry, end, shared, regs, first, n = KERNEL.unpack_from(
                b, spans[4][0] + i * KERNEL.size)
            name = string(name_off, f"kernel {i}")
            if not (entry < end <= len(code)) or entry % 4 or end % 4:
                raise self.fail(f"kernel '{name}': code range {entry}..{end} is empty, "
                                f"misaligned or outside the code ({len(code)} bytes)")
            if not 1 <= regs <= NUM_REGS:
                raise self.fail(f"kernel '{name}': register count {regs} not in 1..{NUM_REGS}")
            used = highest_register(code[entry:end]) + 1
            if regs < used:
                raise self.fail(f"kernel '{name}': register count {regs}, but its code uses "
                                f"r{used - 1}")
            if shared > MAX_SHARED_BYTES:
                raise self.fail(f"kernel '{name}': shared size {shared} over "
                                f"{MAX_SHARED_BYTES}")
            if n > MAX_PARAMS or first + n > len(params):
                raise self.fail(f"kernel '{name}': parameters {first}..{first + n} outside "
                                f"the parameter table ({len(params)} entries)")
            kparams = params[first:first + n]
            if len({p.name for p in kparams}) != len(kparams):
                raise self.fail(f"kernel '{name}': two parameters have the same name")
            for j, p in enumerate(kparams):
                if p.offset != 4 * j:
                    raise self.fail(f"kernel '{name}': parameter '{p.name}' has offset "
                                    f"{p.offset}, expected {4 * j}")
            if name in kernels:
                raise self.fail(f"kernel '{name}' defined twice")
            kernels[name] = KernelInfo(name, entry, end, kparams, shared, regs)

        relocations: list[Relocation] = []
        for i in range(spans[6][1]):
            code_off, kind, data_off = RELOC.unpack_from(b, spans[6][0] + i * RELOC.size)
            if kind >= len(RELOC_KINDS):
                raise self.fail(f"relocation {i}: unknown kind {kind}")
            if code_off % 4 or code_off + 4 > len(code):
                raise self.fail(f"relocation {i}: code offset {code_off} outside or "
                                f"misaligned in the code ({len(code)} bytes)")
            if data_off > len(data):
                raise self.fail(f"relocation {i}: data offset {data_off} outside the data "
                                f"section ({len(data)} bytes)")
            (word,) = struct.unpack_from("<I", code, code_off)
            try:
                target = decode(word).instr
            except EncodingError:
                target = None
            if target is None or not target.fmt.has("imm16"):
                raise self.fail(f"relocation {i}: the word at code offset {code_off} has no "
                                "16-bit immediate to patch")
            relocations.append(Relocation(code_off, RELOC_KINDS[kind], data_off))
        return ObjectFile(code, data, data_align, kernels, symbols, relocations)

