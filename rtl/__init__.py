"""simtgpu.rtl."""
