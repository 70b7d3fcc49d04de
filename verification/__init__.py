"""simtgpu.verification."""
