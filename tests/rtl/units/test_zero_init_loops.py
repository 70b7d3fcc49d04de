"""The export writes a memory whose words all start at zero as one loop
(``verilog_export.zero_init_loops``); yosys reads the same initial contents from it as from the
word-by-word Verilog that Amaranth gives, and a memory with any other contents is untouched."""

import json

from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out
from simtgpu.rtlsim import synth
from simtgpu.rtlsim.verilog_export import export, zero_init_loops


class _TwoMemories(wiring.Component):
    """A zero-initialised memory (``table``: a Verilog keyword, so an escaped name) and one
    with contents (``contents``), both read and written (a memory never written would be a
    ROM, which yosys writes as logic)."""

    addr: In(6)
    y: Out(16)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.table = zeros = memory.Memory(shape=8, depth=48, init=[])
        m.submodules.contents = contents = memory.Memory(
            shape=8, depth=48, init=[(7 * i + 3) % 256 for i in range(48)])
        rz, rc = zeros.read_port(), contents.read_port()
        m.d.comb += [rz.addr.eq(self.addr), rc.addr.eq(self.addr),
                     self.y.eq(rz.data | rc.data << 8)]
        for mem in (zeros, contents):
            w = mem.write_port()
            m.d.comb += [w.addr.eq(self.addr), w.data.eq(self.addr), w.en.eq(self.addr[0])]
        return m


def _mem_inits(text: str, tmp_path, name: str) -> dict[str, str]:
    """Each memory's INIT parameter as yosys reads ``text`` (its JSON netlist), by memory."""
    (tmp_path / f"{name}.v").write_text(text)
    synth.run_yosys(f"read_verilog {name}.v\nproc\nmemory_collect\nwrite_json {name}.json\n",
                    tmp_path, name)
    cells = json.loads((tmp_path / f"{name}.json").read_text())["modules"]["top"]["cells"]
    return {c["parameters"]["MEMID"]: c["parameters"]["INIT"] for c in cells.values()
            if c["type"] == "$mem_v2"}


def test_a_zero_memory_becomes_a_loop_with_the_contents_yosys_reads_from_the_words(tmp_path):
    words = verilog.convert(_TwoMemories(), name="top", emit_src=False)
    loops, _ = export(_TwoMemories(), "top", reuse=False)
    assert "\\table [0] = " in words and "\\table [0] = " not in loops
    assert loops.count("initial for") == 1
    assert "contents[0] = 8'h03;" in loops and loops.count("contents[") == words.count("contents[")
    want = _mem_inits(words, tmp_path, "words")
    got = _mem_inits(loops, tmp_path, "loops")
    assert got == want and len(got) == 2
    zeros = next(v for k, v in got.items() if "table" in k)
    assert set(zeros) == {"0"} and len(zeros) == 48 * 8  # every bit set, none left x


WORDS = """\
  reg [7:0] mem [2:0];
  initial begin
    mem[0] = 8'h00;
    mem[1] = 8'h{x};
    mem[2] = 8'h00;
  end
"""


def test_only_a_memory_whose_every_word_is_listed_as_zero_is_rewritten():
    assert "initial for" in zero_init_loops(WORDS.format(x="00"))
    assert zero_init_loops(WORDS.format(x="01")) == WORDS.format(x="01")
    missing = WORDS.format(x="00").replace("    mem[2] = 8'h00;\n", "")
    assert zero_init_loops(missing) == missing
