"""simtgpu.compiler_backend."""
