"""Python-integer reference of the ISA's 32-bit integer operations, written from the meanings
in docs/isa.md: the one table that the ISS tests and the RTL unit tests check against."""

from collections.abc import Callable

MASK32 = 0xFFFFFFFF


def s32(x: int) -> int:
    """The signed value of the 32-bit word ``x``."""
    return x - (1 << 32) if x & 0x80000000 else x


# register-register operations: (a, b) -> 32-bit result
INT_REF: dict[str, Callable[[int, int], int]] = {
    "add": lambda a, b: (a + b) & MASK32,
    "sub": lambda a, b: (a - b) & MASK32,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "shl": lambda a, b: (a << (b & 31)) & MASK32,
    "shr": lambda a, b: a >> (b & 31),
    "sra": lambda a, b: (s32(a) >> (b & 31)) & MASK32,
    "min": lambda a, b: min(s32(a), s32(b)) & MASK32,
    "max": lambda a, b: max(s32(a), s32(b)) & MASK32,
    "minu": min,
    "maxu": max,
    "mul": lambda a, b: (a * b) & MASK32,
    "mulhi": lambda a, b: ((s32(a) * s32(b)) >> 32) & MASK32,
    "mulhu": lambda a, b: (a * b) >> 32,
}

# isetp conditions: (a, b) -> bool
CMP_REF: dict[str, Callable[[int, int], bool]] = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "lt": lambda a, b: s32(a) < s32(b), "le": lambda a, b: s32(a) <= s32(b),
    "gt": lambda a, b: s32(a) > s32(b), "ge": lambda a, b: s32(a) >= s32(b),
    "ltu": lambda a, b: a < b, "leu": lambda a, b: a <= b,
    "gtu": lambda a, b: a > b, "geu": lambda a, b: a >= b,
}

# register-immediate forms: the immediate is sign-extended to 32 bits, then the
# register-register operation applies
IMM_REF: dict[str, Callable[[int, int], int]] = {
    f"{op}i": (lambda a, i, op=op: INT_REF[op](a, i & MASK32))
    for op in ("add", "and", "or", "xor", "shl", "shr", "sra", "mul")}
