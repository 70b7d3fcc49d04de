"""The simtgpu instruction set as data: formats, operand kinds, the instruction table, the ABI.

Everything else (assembler, disassembler, ISS dispatch, RTL decoder constants, compiler
instruction selection, docs/isa.md) is derived from these definitions.
"""

from .abi import (
    FAULT_DOCS,
    GLOBAL_NULL_GUARD,
    MEMORY_MAP,
    NUM_PREDS,
    NUM_REGS,
    PARAM_TYPES,
    PT,
    SREG_BY_NAME,
    SREG_DOCS,
    FaultCause,
    SReg,
)
from .encoding import Decoded, EncodingError, decode, encode, used_fields
from .formats import FORMATS, IMM_MAX, IMM_MIN, Field, Format
from .instructions import (
    BY_ENCODING,
    BY_MNEMONIC,
    INSTRUCTIONS,
    RESERVED_OPCODES,
    SETS_PC,
    SIMT_OPS,
    Flow,
    Instr,
    Lat,
    Sem,
    Space,
)
from .operands import Kind, Operand, pred_src_decode, pred_src_encode

__all__ = [
    "BY_ENCODING", "BY_MNEMONIC", "FAULT_DOCS", "FORMATS", "GLOBAL_NULL_GUARD", "IMM_MAX",
    "IMM_MIN", "INSTRUCTIONS", "MEMORY_MAP", "NUM_PREDS", "NUM_REGS", "PARAM_TYPES", "PT",
    "RESERVED_OPCODES", "SETS_PC", "SIMT_OPS", "SREG_BY_NAME", "SREG_DOCS", "Decoded",
    "EncodingError", "FaultCause", "Field", "Flow", "Format", "Instr", "Kind", "Lat", "Operand",
    "SReg", "Sem", "Space", "decode", "encode", "pred_src_decode", "pred_src_encode", "used_fields",
]
