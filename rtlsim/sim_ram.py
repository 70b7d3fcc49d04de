"""Device-memory array for Verilog simulation builds of the harness.

Amaranth writes every word of a memory's initial contents into the netlist, which for a
device memory of megabytes makes Verilog files of hundreds of megabytes and minutes of
conversion. The memory model therefore keeps its array, in Verilog builds, in this small
hand-written module (zeroed by a loop at time 0) and instantiates it as a black box; in the
Amaranth simulator it uses an ``amaranth.lib.memory.Memory`` with the same ports instead.
:data:`SIM_RAM_VERILOG` must be appended to the generated Verilog (``generate_verilog`` does).

Ports: a synchronous read port (``rd_*``, data the cycle after the address while ``rd_en``),
a write port with byte enables (``wr_*``), and a backdoor read/write port (``bd_*``).
Reads return the data from before a same-cycle write (no transparency), as the Amaranth
memory does.
"""

from __future__ import annotations

from amaranth.hdl import ClockSignal, Instance, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SIM_RAM_MODULE", "SIM_RAM_VERILOG", "SimRam"]

SIM_RAM_MODULE = "simtgpu_sim_ram"

SIM_RAM_VERILOG = f"""
/* Device-memory array of the simulation harness (rtlsim/sim_ram.py). */
module {SIM_RAM_MODULE} #(
    parameter WIDTH = 128,
    parameter DEPTH = 1024,
    parameter ABITS = 10
) (
    input  wire               clk,
    input  wire [ABITS-1:0]   rd_addr,
    input  wire               rd_en,
    output reg  [WIDTH-1:0]   rd_data,
    input  wire [ABITS-1:0]   wr_addr,
    input  wire [WIDTH/8-1:0] wr_be,
    input  wire [WIDTH-1:0]   wr_data,
    input  wire [ABITS-1:0]   bd_addr,
    input  wire               bd_we,
    input  wire [WIDTH-1:0]   bd_wdata,
    output reg  [WIDTH-1:0]   bd_rdata
);
    reg [WIDTH-1:0] mem [0:DEPTH-1];
    wire [WIDTH-1:0] wr_mask;
    genvar b;
    generate
        for (b = 0; b < WIDTH / 8; b = b + 1) begin : g_mask
            assign wr_mask[b*8 +: 8] = {{8{{wr_be[b]}}}};
        end
    endgenerate
    integer i;
    initial begin
        for (i = 0; i < DEPTH; i = i + 1) mem[i] = {{WIDTH{{1'b0}}}};
        rd_data = {{WIDTH{{1'b0}}}};
        bd_rdata = {{WIDTH{{1'b0}}}};
    end
    always @(posedge clk) begin
        if (rd_en) rd_data <= mem[rd_addr];
        bd_rdata <= mem[bd_addr];
        if (|wr_be) mem[wr_addr] <= (mem[wr_addr] & ~wr_mask) | (wr_data & wr_mask);
        if (bd_we) mem[bd_addr] <= bd_wdata;
    end
endmodule
"""


class SimRam(wiring.Component):
    """Black-box instance of :data:`SIM_RAM_VERILOG` (Verilog builds only).

    Parameters
    ----------
    width:
        Bits per row (a multiple of 8).
    depth:
        Rows.
    """

    def __init__(self, width: int, depth: int):
        if width % 8:
            raise ValueError(f"width must be a multiple of 8, not {width}")
        self.width = width
        self.depth = depth
        self.abits = max(1, (depth - 1).bit_length())
        super().__init__({
            "rd_addr": In(self.abits), "rd_en": In(1), "rd_data": Out(width),
            "wr_addr": In(self.abits), "wr_be": In(width // 8), "wr_data": In(width),
            "bd_addr": In(self.abits), "bd_we": In(1), "bd_wdata": In(width),
            "bd_rdata": Out(width),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.ram = Instance(
            SIM_RAM_MODULE,
            p_WIDTH=self.width, p_DEPTH=self.depth, p_ABITS=self.abits,
            i_clk=ClockSignal(),
            i_rd_addr=self.rd_addr, i_rd_en=self.rd_en, o_rd_data=self.rd_data,
            i_wr_addr=self.wr_addr, i_wr_be=self.wr_be, i_wr_data=self.wr_data,
            i_bd_addr=self.bd_addr, i_bd_we=self.bd_we, i_bd_wdata=self.bd_wdata,
            o_bd_rdata=self.bd_rdata,
        )
        return m
