"""simtgpu.cli."""
