"""simtgpu.driver_model."""
