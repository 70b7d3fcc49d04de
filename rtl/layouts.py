"""Stage payload layouts of the SIMT core.

The nine stages are ``sch if id is rr ex1 ex2 mem wb``. Each boundary register carries one
``StructLayout`` named after the two stages it joins. Lane-wide fields depend on ``lanes``, so
the layouts are built by functions of the core parameters.

``DECODED`` is the control word the decoder produces (``id``) and the instruction buffer holds
until ``is`` issues it; later stages carry the parts they still need.
"""

from __future__ import annotations

from amaranth import Cat, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out
from simtgpu.isa import NUM_PREDS

from .isa_consts import InstrId, Lat, Sem
from .signatures import dim3_layout

DECODED = data.StructLayout({
    "iid": InstrId,
    "sem": Sem,
    "lat": Lat,
    "fn": 5,
    "illegal": 1,
    "guard": 3,  # guard predicate index (7 = pt)
    "gneg": 1,  # guard negated
    "rd": 5,
    "rs1": 5,
    "rs2": 5,
    "rs3": 5,
    "wr_reg": 1,  # writes register rd (never r0)
    "wr_pred": 1,  # writes predicate rd[2:0] (never pt)
    "rd_rs1": 1,  # reads register rs1 (scoreboard)
    "rd_rs2": 1,
    "rd_rs3": 1,
    "rd_ps1": 1,  # reads predicate source in the rs1 field
    "rd_ps2": 1,
    "rd_ps3": 1,
    "rd_rd": 1,  # reads register rd (lli keeps the upper half)
    "use_imm": 1,  # operand b is the immediate
    "imm": 32,  # sign- or zero-extended immediate; byte offset for branches
    "ctrl": 1,  # control instruction: fetch of this warp stops until ex1 resolves it
})


def split_signal(layout: data.Layout, name: str) -> data.View:
    """A signal of ``layout`` built from one ``Signal`` per field and per array element
    (named ``name.field``, ``name.field[i]``), seen through a view of the layout.

    Reads and writes look as on ``Signal(layout)``. The difference is in the Verilog: each
    field is its own variable, so Verilator keeps it in a native machine word, drops the
    fields nobody reads and updates only the fields that are written, where a packed
    1,000-bit stage register costs masks and shifts of the whole vector on every access.
    Waveform viewers show the fields under the names Amaranth gives the fields of a packed
    signal.
    """
    return data.View(layout, Cat(*_leaves(layout, name)))


def fields_signature(layout: data.StructLayout) -> wiring.Signature:
    """The ports' counterpart of :func:`split_signal`: a signature with one member per field
    of ``layout`` (a sub-signature per struct field, an array of members per array field),
    from the sender's side. A port ``Out(fields_signature(l))`` is one signal per field in
    the Verilog where ``Out(l)`` is one packed vector; :func:`port_view` sees it as ``l``."""
    return wiring.Signature({name: _member(fld.shape) for name, fld in layout})


def _member(shape) -> wiring.Member:
    if isinstance(shape, data.StructLayout):
        return Out(fields_signature(shape))
    if isinstance(shape, data.ArrayLayout):
        inner = _member(shape.elem_shape)
        return inner.array(shape.length)
    return Out(shape)


def port_view(port, layout: data.StructLayout) -> data.View:
    """A port made by :func:`fields_signature` seen through a view of ``layout``, so it is
    read and assigned as a whole (``port_view(p, l).eq(x)``) or by field."""
    return data.View(layout, Cat(*_port_leaves(port, layout)))


def _port_leaves(port, shape) -> list:
    if isinstance(shape, data.StructLayout):
        return [s for f, fld in shape for s in _port_leaves(getattr(port, f), fld.shape)]
    if isinstance(shape, data.ArrayLayout):
        return [s for i in range(shape.length) for s in _port_leaves(port[i], shape.elem_shape)]
    return [port]


def per_warp(layout: data.Layout, warps: int, name: str = "") -> data.View:
    """``warps`` copies of ``layout`` (an ``ArrayLayout`` over the warp slots) made like
    :func:`split_signal`: one signal per field and per warp, named ``w<w>_<field>`` for the
    fields of a ``StructLayout`` (``w0_pc``, ``w0_active``) and ``w<w>_<name>`` otherwise.

    Index it with a constant (``state[w].pc``); a warp picked at run time is read through a
    ``Switch``, which keeps each field a machine word in simulation."""
    leaves = []
    for w in range(warps):
        if isinstance(layout, data.StructLayout):
            leaves += [s for f, fld in layout for s in _leaves(fld.shape, f"w{w}_{f}")]
        else:
            leaves += _leaves(layout, f"w{w}_{name}")
    return data.View(data.ArrayLayout(layout, warps), Cat(*leaves))


def _leaves(shape, name: str) -> list[Signal]:
    if isinstance(shape, data.StructLayout):
        return [s for f, fld in shape for s in _leaves(fld.shape, f"{name}.{f}")]
    if isinstance(shape, data.ArrayLayout):
        return [s for i in range(shape.length) for s in _leaves(shape.elem_shape, f"{name}[{i}]")]
    return [Signal(shape, name=name)]


def lanes_array(width: int, lanes: int) -> data.ArrayLayout:
    return data.ArrayLayout(width, lanes)


def sch_if(warps: int) -> data.StructLayout:
    return data.StructLayout({"valid": 1, "warp": _bits(warps), "pc": 32})


def if_id(warps: int) -> data.StructLayout:
    return data.StructLayout({"valid": 1, "warp": _bits(warps), "pc": 32})


ISSUE_KIND = data.StructLayout({"fence": 1, "sfu": 1, "mma": 1})
"""What the issue stage's choice asks of a head besides its hazard: a ``fence`` waits for
its warp's stores, an SFU instruction or an ``mma`` for its unit; and, once it issues, what
it starts (the fence's invalidation, the SFU's reserve, the matrix unit's issue)."""

ISSUE_FIELDS = data.StructLayout({"needs": 32 + NUM_PREDS, "dests": 32 + NUM_PREDS,
                                  "kind": ISSUE_KIND})
"""The fields of an instruction-buffer entry that instruction memory keeps beside each word
(``issue.issue_fields`` works them out)."""


def id_is() -> data.StructLayout:
    """One instruction-buffer entry. ``pc_fault``: the fetch address was past instruction
    memory (the fault is raised only if the warp gets to issue it). ``needs``: the
    scoreboard bits the instruction reads or writes (``issue.needs``, 32 registers then the
    predicates), the bits it sets as it issues (``dests``, ``issue.dests``) and ``kind``
    (:data:`ISSUE_KIND`), all worked out as instruction memory is written (``ISSUE_FIELDS``),
    so that ``is`` only ANDs them with the pending bits and the units' states."""
    return data.StructLayout({"pc": 32, "word": 32, "pc_fault": 1, "dec": DECODED,
                              **ISSUE_FIELDS.members})


def is_rr(warps: int) -> data.StructLayout:
    return data.StructLayout({"valid": 1, "warp": _bits(warps), "pc": 32, "word": 32,
                              "dec": DECODED})


def uop(warps: int, lanes: int) -> data.StructLayout:
    """What travels through ``rr_ex1``, ``ex1_ex2``, ``ex2_mem`` and ``mem_wb``.

    ``a``/``b``/``c`` are the operands (``a`` becomes the address in ex1), ``result`` and
    ``presult`` the register and predicate values to write back.
    """
    return data.StructLayout({
        "valid": 1,
        "warp": _bits(warps),
        "pc": 32,
        "word": 32,  # the instruction word, for fault records
        "dec": DECODED,
        "deferred": 1,  # a global load whose value returns later (no write-back in wb)
        "active": lanes,
        "exec": lanes,
        "a": data.ArrayLayout(32, lanes),
        "b": data.ArrayLayout(32, lanes),
        "c": data.ArrayLayout(32, lanes),
        "pa": lanes,
        "pb": lanes,
        "pc3": lanes,
        "result": data.ArrayLayout(32, lanes),
        "presult": lanes,
    })


rr_ex1 = ex1_ex2 = ex2_mem = mem_wb = uop


def warp_state(lanes: int) -> data.StructLayout:
    """What the core keeps per warp slot (:func:`per_warp`): the next fetch address and the
    SIMT masks (``active``: the lanes on the current path; ``live``: the lanes not exited).

    One-bit flags per warp (member of the block, finished, waiting for a control instruction,
    held at a barrier) are ``warps``-bit masks instead: they are tested as sets."""
    return data.StructLayout({"pc": 32, "active": lanes, "live": lanes})


def issue_state(regs: int) -> data.StructLayout:
    """What ``is`` keeps per warp slot besides the scoreboard: ``long``, the registers a late
    write-back (global load or atomic, ``ldparam``, SFU) will write; ``stores``, the global
    stores sent and not yet acknowledged (a ``fence`` waits for zero)."""
    return data.StructLayout({"long": regs, "stores": 8})


def bar_arrival() -> data.StructLayout:
    """Per warp slot: the pc and word of the warp's last ``bar`` (for the deadlock record)."""
    return data.StructLayout({"bar_pc": 32, "bar_word": 32})


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


def block_slot(warps: int) -> data.StructLayout:
    """A resident block's record, one per block slot of a core: its id, its first warp slot
    and its first byte of shared memory. The launch-wide fields (entry, dims, grid, params,
    shared size) are the same for every block of a launch and are kept once."""
    return data.StructLayout({"block_id": dim3_layout(), "warp_base": _bits(warps),
                              "shared_base": 32})


def warp_block(warps: int, slots: int) -> data.StructLayout:
    """Per warp slot: the block slot it belongs to and its index within the block
    (``%warpid``, and the warp number of its retire and fault records)."""
    return data.StructLayout({"slot": _bits(slots), "index": _bits(warps)})
