"""simtgpu.assembler."""
