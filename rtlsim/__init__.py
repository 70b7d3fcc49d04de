"""simtgpu.rtlsim: host-side simulation of the RTL (harness top, memory model, Verilog export,
the Verilator finder, build cache and runner). Imports simtgpu.rtl; rtl/ never imports it."""
