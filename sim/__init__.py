"""simtgpu.sim."""
