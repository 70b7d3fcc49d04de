"""The two-pass assembler: source text -> :class:`ObjectFile`.

Pass 1 reads every line, defines labels, handles directives and fixes the size of every
instruction and pseudo-instruction. Pass 2 evaluates operands (all labels are known now)
and encodes. An error does not stop a pass: each is recorded with its line and column, and
all of them are raised together as one :class:`SourceErrors`; only past :data:`MAX_ERRORS`
(a binary or the wrong file given as source) does assembly stop, saying where.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from simtgpu.errors import SimtgpuError, SourceError, SourceErrors, SourceLocation
from simtgpu.isa import BY_MNEMONIC, NUM_REGS, PARAM_TYPES
from simtgpu.isa.abi import MAX_PARAMS

from .expr import Forward, Value, evaluate
from .floats import f32_bits_exact
from .inputs import decode_source, read_regular_file
from .lexer import AsmError, Reported, Statement, Token, parse_statement
from .objfile import (
    MAX_SECTION_BYTES,
    MAX_SHARED_BYTES,
    KernelInfo,
    ObjectFile,
    ParamInfo,
    Relocation,
    Symbol,
    highest_register,
)
from .operands import encode_instruction, is_register_name
from .pseudo import (
    PSEUDOS,
    check_arity,
    expand_fixed,
    expand_la,
    expand_li,
    float_operand,
    li_size,
    li_value,
)
from .suggest import Suggester, hint

DIRECTIVES = (".kernel", ".end", ".param", ".shared", ".regs", ".equ", ".text", ".data",
              ".word", ".float", ".byte", ".space", ".align")

MAX_ERRORS = 100
"""Distinct errors collected before assembly stops; the next one becomes a last entry, "too
many errors ..., stopping at line N", at the line where it stopped. (``simtgpu`` prints the
first :data:`simtgpu.cli.main.MAX_ERRORS_SHOWN` of them and a count.)"""

_SUGGEST_MNEMONIC = Suggester([*BY_MNEMONIC, *PSEUDOS])
_SUGGEST_DIRECTIVE = Suggester(DIRECTIVES)


class _TooManyErrors(Exception):
    """Raised by :meth:`_Assembler.error` past :data:`MAX_ERRORS`; caught in ``run``."""

    def __init__(self, line_no: int):
        super().__init__(line_no)
        self.line_no = line_no


@dataclass
class ListingLine:
    """One emitted chunk for ``simtgpu asm --listing``."""

    section: str
    offset: int
    data: bytes
    line_no: int
    source: str


@dataclass
class _Kernel:
    name: str
    st: Statement
    tok: Token
    entry: int
    end: int | None = None
    params: list[ParamInfo] = field(default_factory=list)
    shared: int = 0
    regs: int | None = None
    regs_st: Statement | None = None
    has_code: bool = False
    seen: set[str] = field(default_factory=set)  # .shared / .regs given once


@dataclass
class _Item:
    """Something pass 2 turns into bytes (or into kernel metadata, when size is 0)."""

    st: Statement
    section: str
    offset: int
    size: int
    kernel: _Kernel | None


class _Assembler:
    def __init__(self, text: str, filename: str):
        self.filename = filename
        # Lines end at \n only (a \r before it is dropped): str.splitlines would also end
        # one at a form feed, NEL or U+2028 inside a comment and shift every later line number
        self.lines = [line.removesuffix("\r") for line in text.removeprefix("\ufeff")
                      .removesuffix("\n").split("\n")] if text else []
        self.errors: dict[tuple[int, int, str], SourceError] = {}
        self.labels: dict[str, tuple[str, int, Statement]] = {}
        self.equs: dict[str, tuple[list[Token], Statement]] = {}
        self.equ_cache: dict[str, Value] = {}
        self.equ_active: set[str] = set()
        self.equ_failed: set[str] = set()
        self.kernels: dict[str, _Kernel] = {}
        self.items: list[_Item] = []
        self.pc = {"code": 0, "data": 0}
        self.data_align = 4
        self.relocations: list[Relocation] = []
        self.listing: list[ListingLine] = []
        self._label_hints: tuple[tuple[int, int], Suggester] | None = None

    # -- errors ----------------------------------------------------------------------------
    def error(self, st: Statement, col: int, message: str) -> None:
        # columns count a tab as reaching the next multiple of 8, as the rendered source does
        col = len(st.text[:max(col, 1) - 1].expandtabs(8)) + 1
        key = (st.line_no, col, message)
        if key in self.errors:
            return
        if len(self.errors) >= MAX_ERRORS:
            raise _TooManyErrors(st.line_no)
        self.errors[key] = SourceError(SourceLocation(self.filename, st.line_no, col, st.text),
                                       message)

    def report(self, st: Statement, e: AsmError) -> None:
        if not isinstance(e, Reported):
            self.error(st, e.col, e.message)

    # -- symbols ---------------------------------------------------------------------------
    def resolver(self, st: Statement, section: str, pc: int, final: bool,
                 params: dict[str, int] | None = None):
        def resolve(tok: Token) -> Value:
            name = tok.text
            if name == ".":
                return Value(pc, 1 if section == "data" else 0, ".")
            if params is not None and name in params:
                return Value(params[name])
            if name in self.labels:
                sec, off, _ = self.labels[name]
                return Value(off, 1, name) if sec == "data" else Value(off)
            if name in self.equs:
                return self.equ_value(name, tok, final)
            if not final:
                raise Forward(name)
            if is_register_name(name):
                raise AsmError(tok.col, f"register {name} where a constant is expected")
            close = [self.label_suggester().best(name), Suggester(params or ()).best(name)]
            best = max((c for c in close if c is not None), default=None)
            raise AsmError(tok.col, f"undefined label '{name}'"
                           f"{hint(best[1] if best else None)}")
        return resolve

    def label_suggester(self) -> Suggester:
        """Hints among the labels and constants, built once they are all known."""
        size = (len(self.labels), len(self.equs))
        if self._label_hints is None or self._label_hints[0] != size:
            self._label_hints = (size, Suggester([*self.labels, *self.equs]))
        return self._label_hints[1]

    def equ_value(self, name: str, tok: Token, final: bool) -> Value:
        if name in self.equ_cache:
            return self.equ_cache[name]
        if name in self.equ_failed:
            raise Reported()
        toks, st = self.equs[name]
        if name in self.equ_active:
            raise AsmError(tok.col, f"'.equ {name}' is defined in terms of itself")
        self.equ_active.add(name)
        try:
            # an .equ's '.' is meaningless away from its line; give it the value 0 there
            v = evaluate(toks, self.resolver(st, "code", 0, final))
        except AsmError as e:
            # reported once, at the .equ; its users fail quietly
            self.report(st, e)
            self.equ_failed.add(name)
            raise Reported() from None
        finally:
            self.equ_active.discard(name)
        if final:
            self.equ_cache[name] = v
        return v

    def value(self, st: Statement, toks: list[Token], section: str, pc: int, final: bool,
              params: dict[str, int] | None = None) -> Value:
        return evaluate(toks, self.resolver(st, section, pc, final, params))

    def const(self, st: Statement, toks: list[Token], what: str, section: str = "code",
              pc: int = 0, final: bool = True) -> int:
        v = self.value(st, toks, section, pc, final)
        if v.rel:
            raise AsmError(toks[0].col, f"{what} cannot use the data label '{v.sym}'")
        return v.value

    def define_label(self, st: Statement, tok: Token, section: str, offset: int) -> None:
        name = tok.text
        if name == "." or is_register_name(name):
            self.error(st, tok.col, f"'{name}' cannot be a label (it is a register name)"
                       if name != "." else "'.' cannot be a label")
            return
        prev = self.labels.get(name) or self.equs.get(name)
        if prev is not None:
            prev_st = prev[2] if len(prev) == 3 else prev[1]
            self.error(st, tok.col, f"duplicate label '{name}' (first defined at line "
                       f"{prev_st.line_no})")
            return
        self.labels[name] = (section, offset, st)

    # -- pass 1 ----------------------------------------------------------------------------
    def pass1(self) -> None:
        section = "code"
        kernel: _Kernel | None = None
        for n, text in enumerate(self.lines, 1):
            try:
                st = parse_statement(n, text)
            except AsmError as e:
                self.report(Statement(n, text), e)
                continue
            for lab in st.labels:
                self.define_label(st, lab, section, self.pc[section])
            if st.head is None:
                continue
            head = st.head
            try:
                if head.text.startswith("."):
                    section, kernel = self.directive(st, section, kernel)
                else:
                    self.instruction1(st, section, kernel)
            except AsmError as e:
                self.report(st, e)
        if kernel is not None:
            self.error(kernel.st, kernel.tok.col,
                       f"kernel '{kernel.name}' is never ended (missing .end)")
        for k in self.kernels.values():
            if k.end is None:
                k.end = self.pc["code"]

    def _need_kernel(self, st: Statement, kernel: _Kernel | None) -> _Kernel:
        assert st.head is not None
        if kernel is None:
            raise AsmError(st.head.col, f"{st.head.text} outside a kernel "
                           "(it belongs between .kernel and .end)")
        return kernel

    def _operands(self, st: Statement, n: int, syntax: str) -> list[list[Token]]:
        assert st.head is not None
        if len(st.operands) != n:
            col = st.operands[n][0].col if len(st.operands) > n else st.head.col
            raise AsmError(col, f"{st.head.text} takes {n} operand{'s' * (n != 1)} "
                           f"({syntax}), got {len(st.operands)}")
        return st.operands

    def _name(self, toks: list[Token], what: str) -> Token:
        if len(toks) != 1 or toks[0].kind != "ident":
            raise AsmError(toks[0].col, f"expected {what}, got '{' '.join(t.text for t in toks)}'")
        return toks[0]

    def directive(self, st: Statement, section: str, kernel: _Kernel | None
                  ) -> tuple[str, _Kernel | None]:
        head = st.head
        assert head is not None
        d = head.text
        if st.guard is not None:
            raise AsmError(st.guard[2].col, f"a directive ({d}) cannot have a guard")
        if d in (".text", ".data"):
            self._operands(st, 0, d)
            return ("code" if d == ".text" else "data"), kernel
        if d == ".kernel":
            (op,) = self._operands(st, 1, ".kernel NAME")
            tok = self._name(op, "a kernel name")
            if kernel is not None:
                raise AsmError(head.col, f".kernel inside kernel '{kernel.name}' "
                               "(missing .end)")
            if section != "code":
                raise AsmError(head.col, ".kernel in the .data section (write .text first)")
            if tok.text in self.kernels:
                raise AsmError(tok.col, f"duplicate kernel '{tok.text}' (first defined at line "
                               f"{self.kernels[tok.text].st.line_no})")
            k = _Kernel(tok.text, st, tok, self.pc["code"])
            self.kernels[k.name] = k
            return section, k
        if d == ".end":
            self._operands(st, 0, ".end")
            k = self._need_kernel(st, kernel)
            k.end = self.pc["code"]
            if k.end == k.entry:
                self.error(st, head.col, f"kernel '{k.name}' has no instructions")
            return section, None
        if d == ".param":
            name_t, type_t = self._operands(st, 2, ".param NAME, TYPE")
            k = self._need_kernel(st, kernel)
            if k.has_code:
                raise AsmError(head.col, ".param after the kernel's first instruction "
                               "(parameters come first)")
            tok = self._name(name_t, "a parameter name")
            typ = self._name(type_t, "a parameter type")
            if typ.text not in PARAM_TYPES:
                raise AsmError(typ.col, f"unknown parameter type '{typ.text}' "
                               f"(one of {', '.join(PARAM_TYPES)})")
            if any(p.name == tok.text for p in k.params):
                raise AsmError(tok.col, f"duplicate parameter '{tok.text}'")
            if len(k.params) >= MAX_PARAMS:
                raise AsmError(head.col, f"more than {MAX_PARAMS} parameters")
            k.params.append(ParamInfo(tok.text, typ.text, 4 * len(k.params)))
            return section, kernel
        if d in (".shared", ".regs"):
            self._operands(st, 1, f"{d} N")
            k = self._need_kernel(st, kernel)
            if d in k.seen:
                raise AsmError(head.col, f"{d} given twice for kernel '{k.name}'")
            k.seen.add(d)
            self.items.append(_Item(st, section, 0, 0, k))
            return section, kernel
        if d == ".equ":
            name_t, expr = self._operands(st, 2, ".equ NAME, EXPR")
            tok = self._name(name_t, "a constant name")
            if tok.text in self.labels or tok.text in self.equs:
                raise AsmError(tok.col, f"duplicate label '{tok.text}'")
            if is_register_name(tok.text) or tok.text == ".":
                raise AsmError(tok.col, f"'{tok.text}' cannot be a constant name")
            self.equs[tok.text] = (expr, st)
            return section, kernel
        if d in (".word", ".float", ".byte", ".space", ".align"):
            self.data1(st, section, kernel)
            return section, kernel
        raise AsmError(head.col, f"unknown directive '{d}'{hint(_SUGGEST_DIRECTIVE(d))}")

    def data1(self, st: Statement, section: str, kernel: _Kernel | None) -> None:
        head = st.head
        assert head is not None
        d = head.text
        pc = self.pc[section]
        if d in (".word", ".float", ".byte"):
            if not st.operands:
                raise AsmError(head.col, f"{d} needs at least one value")
            unit = 1 if d == ".byte" else 4
            if d == ".byte" and section == "code":
                raise AsmError(head.col, ".byte in .text would leave code unaligned")
            if unit == 4 and pc % 4:
                raise AsmError(head.col, f"unaligned data: {d} at {section} offset {pc} is not "
                               "4-byte aligned (add .align 4)")
            size = unit * len(st.operands)
        elif d == ".space":
            (op,) = self._operands(st, 1, ".space N")
            try:
                size = self.const(st, op, ".space", section, pc, final=False)
            except Forward as f:
                raise AsmError(op[0].col, f".space size uses '{f}', which is not defined "
                               "yet") from None
            if size < 0:
                raise AsmError(op[0].col, f".space size {size} is negative")
            if section == "code" and size % 4:
                raise AsmError(op[0].col, f".space {size} in .text would leave code unaligned "
                               "(use a multiple of 4)")
        else:  # .align
            (op,) = self._operands(st, 1, ".align N")
            try:
                align = self.const(st, op, ".align", section, pc, final=False)
            except Forward as f:
                raise AsmError(op[0].col, f".align uses '{f}', which is not defined yet"
                               ) from None
            if align < 1 or align & (align - 1) or align > 1 << 16:
                raise AsmError(op[0].col, f".align {align} is not a power of two 1..65536")
            size = -pc % align
            if section == "data":
                self.data_align = max(self.data_align, align)
        if pc + size > MAX_SECTION_BYTES:
            raise AsmError(head.col, f"{d} makes the {section} section larger than "
                           f"{MAX_SECTION_BYTES >> 20} MiB, the most an object file holds")
        if section == "code" and kernel is not None and size:
            kernel.has_code = True
        self.items.append(_Item(st, section, pc, size, kernel))
        self.pc[section] += size

    def instruction1(self, st: Statement, section: str, kernel: _Kernel | None) -> None:
        head = st.head
        assert head is not None
        name = head.text
        if name not in BY_MNEMONIC and name not in PSEUDOS:
            raise AsmError(head.col,
                           f"unknown mnemonic '{name}'{hint(_SUGGEST_MNEMONIC(name))}")
        if section != "code":
            raise AsmError(head.col, f"instruction '{name}' in the .data section "
                           "(write .text first)")
        size = 4
        if name == "li":
            size = 4 * self.li_size1(st)
        elif name == "la":
            size = 8
        if kernel is not None:
            kernel.has_code = True
        self.items.append(_Item(st, section, self.pc["code"], size, kernel))
        self.pc["code"] += size

    def li_size1(self, st: Statement) -> int:
        if len(st.operands) != 2:
            return 1  # pass 2 reports the operand count
        toks = st.operands[1]
        try:
            bits = float_operand(toks)
            if bits is None:
                v = self.value(st, toks, "code", self.pc["code"], final=False)
                bits = li_value(v, toks[0])
        except (Forward, AsmError):
            return 2  # not known yet (or wrong: pass 2 says why): the two-word form fits all
        return li_size(bits)

    # -- pass 2 ----------------------------------------------------------------------------
    def pass2(self) -> tuple[bytes, bytes]:
        out = {"code": bytearray(self.pc["code"]), "data": bytearray(self.pc["data"])}
        for name, (toks, _st) in self.equs.items():
            try:
                self.equ_value(name, toks[0], final=True)
            except AsmError:
                pass  # already recorded at the .equ line
        for item in self.items:
            try:
                blob = self.emit(item)
            except AsmError as e:
                self.report(item.st, e)
                continue
            assert len(blob) == item.size, (item.st.text, len(blob), item.size)
            out[item.section][item.offset:item.offset + item.size] = blob
            if item.size:
                self.listing.append(ListingLine(item.section, item.offset, blob,
                                                item.st.line_no, item.st.text))
        return bytes(out["code"]), bytes(out["data"])

    def emit(self, item: _Item) -> bytes:
        st = item.st
        head = st.head
        assert head is not None
        name = head.text
        if name.startswith("."):
            return self.emit_directive(item)
        guard = st.guard[:2] if st.guard else None
        params = ({p.name: p.offset for p in item.kernel.params} if item.kernel else {})
        pc = item.offset

        def ev(toks: list[Token], with_params: bool) -> Value:
            return self.value(st, toks, "code", pc, True, params if with_params else None)

        if name in BY_MNEMONIC:
            word = encode_instruction(BY_MNEMONIC[name], st.operands, head, guard, pc, ev)
            return struct.pack("<I", word)
        p = PSEUDOS[name]
        check_arity(p, st.operands, head)
        if name == "li":
            toks = st.operands[1]
            bits = float_operand(toks)
            if bits is None:
                bits = li_value(ev(toks, False), toks[0])
            expansion = expand_li(st.operands[0], bits, item.size // 4, head.col)
        elif name == "la":
            toks = st.operands[1]
            v = ev(toks, False)
            if not v.rel:
                raise AsmError(toks[0].col, "la needs a data label (use li for constants)")
            if not 0 <= v.value <= self.pc["data"]:
                raise AsmError(toks[0].col, f"data offset {v.value} outside the data section "
                               f"(0..{self.pc['data']})")
            expansion = expand_la(st.operands[0], v.value, head.col)
            self.relocations += [Relocation(pc, "hi16", v.value),
                                 Relocation(pc + 4, "lo16", v.value)]
        else:
            if name == "jmp" and st.guard is not None:
                raise AsmError(st.guard[2].col, "jmp is unconditional; write '@p bra target' "
                               "for a conditional branch")
            expansion = expand_fixed(p, st.operands, head)
        words = []
        for i, (mn, ops) in enumerate(expansion):
            words.append(encode_instruction(BY_MNEMONIC[mn], ops, head, guard, pc + 4 * i, ev))
        return struct.pack(f"<{len(words)}I", *words)

    def emit_directive(self, item: _Item) -> bytes:
        st = item.st
        head = st.head
        assert head is not None
        d = head.text
        if d in (".shared", ".regs"):
            k = item.kernel
            assert k is not None
            toks = st.operands[0]
            n = self.const(st, toks, d)
            if d == ".shared":
                if not 0 <= n <= MAX_SHARED_BYTES:
                    raise AsmError(toks[0].col, f".shared {n} out of range 0..{MAX_SHARED_BYTES}")
                k.shared = n
            else:
                if not 1 <= n <= NUM_REGS:
                    raise AsmError(toks[0].col, f".regs {n} out of range 1..{NUM_REGS}")
                k.regs, k.regs_st = n, st
            return b""
        if d in (".space", ".align"):
            return bytes(item.size)
        out = bytearray()
        for toks in st.operands:
            if d == ".float":
                bits = float_operand(toks)
                if bits is None:
                    v = self.const(st, toks, ".float", item.section, item.offset)
                    try:
                        bits = f32_bits_exact(v)  # an integer expression: its float value
                    except ValueError:
                        raise AsmError(toks[0].col, f"{v} is out of range for binary32"
                                       ) from None
                out += struct.pack("<I", bits)
                continue
            v = self.const(st, toks, d, item.section, item.offset)
            lo, hi = (-128, 255) if d == ".byte" else (-(1 << 31), (1 << 32) - 1)
            if not lo <= v <= hi:
                raise AsmError(toks[0].col, f"value {v} out of range {lo}..{hi} for {d}")
            out += struct.pack("<B" if d == ".byte" else "<I",
                               v & (0xFF if d == ".byte" else 0xFFFFFFFF))
        return bytes(out)

    # -- kernels ---------------------------------------------------------------------------
    def kernel_infos(self, code: bytes) -> dict[str, KernelInfo]:
        infos = {}
        for k in self.kernels.values():
            assert k.end is not None
            used = highest_register(code[k.entry:k.end]) + 1
            regs = used if k.regs is None else k.regs
            if k.regs is not None and used > k.regs and k.regs_st is not None:
                tok = k.regs_st.operands[0][0]
                self.error(k.regs_st, tok.col, f".regs {k.regs} but kernel '{k.name}' uses "
                           f"r{used - 1}")
            infos[k.name] = KernelInfo(k.name, k.entry, k.end, list(k.params), k.shared, regs)
        return infos

    def run(self) -> tuple[ObjectFile, list[ListingLine]]:
        try:
            self.pass1()
            code, data = self.pass2()
            kernels = self.kernel_infos(code)
        except _TooManyErrors as stop:
            note = SourceError(SourceLocation(self.filename, stop.line_no, 1),
                               f"too many errors (more than {MAX_ERRORS}), stopping at line "
                               f"{stop.line_no}")
            raise SourceErrors([*self.sorted_errors(), note]) from None
        if self.errors:
            raise SourceErrors(self.sorted_errors())
        symbols = {name: Symbol(name, sec, off) for name, (sec, off, _) in self.labels.items()}
        obj = ObjectFile(code, data, self.data_align, kernels, symbols, self.relocations)
        return obj, self.listing

    def sorted_errors(self) -> list[SourceError]:
        return sorted(self.errors.values(), key=lambda e: (e.loc.line, e.loc.col))



def assemble_with_listing(text: str, filename: str = "<string>"
                          ) -> tuple[ObjectFile, list[ListingLine]]:
    """Assemble and also return what each source line produced (for listings)."""
    return _Assembler(text, filename).run()


def assemble(text: str, filename: str = "<string>") -> ObjectFile:
    """Assemble source text; raises :class:`SourceErrors` carrying every error of the file."""
    return _Assembler(text, filename).run()[0]


class SourceFileError(SimtgpuError):
    """A source file that cannot be read: missing, unreadable, a directory, device or pipe."""


def assemble_file(path: str | Path) -> ObjectFile:
    """Assemble the source file at ``path``; :class:`SourceFileError` when it is not a
    readable regular file (a pipe or device is refused unread)."""
    path = Path(path)
    return assemble(_read_source(path), str(path))


def _read_source(path: Path) -> str:
    try:
        raw = read_regular_file(path, SourceFileError)
    except FileNotFoundError:
        raise SourceFileError(f"{path}: no such file") from None
    except OSError as e:
        raise SourceFileError(f"{path}: cannot read: {e.strerror or e}") from None
    return decode_source(raw, path)
