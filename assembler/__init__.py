"""simtgpu.assembler: assembly text -> kernel object files, and back.

``assemble`` / ``assemble_file`` produce an :class:`ObjectFile` (code, data, kernels,
symbols, relocations); ``disassemble`` / ``disassemble_word`` print words as text that
re-assembles to the same bytes. The language is documented in docs/assembly.md and the
object format in docs/object-format.md.
"""

from .assembler import (
    ListingLine,
    SourceFileError,
    assemble,
    assemble_file,
    assemble_with_listing,
)
from .disassembler import disassemble, disassemble_object, disassemble_word
from .objfile import (
    FORMAT_VERSION,
    KernelInfo,
    ObjectFile,
    ObjectFormatError,
    ParamInfo,
    Relocation,
    Symbol,
)

__all__ = [
    "FORMAT_VERSION", "KernelInfo", "ListingLine", "ObjectFile", "ObjectFormatError",
    "ParamInfo", "Relocation", "SourceFileError", "Symbol", "assemble", "assemble_file",
    "assemble_with_listing", "disassemble", "disassemble_object", "disassemble_word",
]
