"""simtgpu: an open SIMT GPU written in Python.

The distribution maps each top-level folder of the repository onto a subpackage
(``isa/`` -> ``simtgpu.isa`` and so on); this file only makes ``simtgpu`` a package.
"""

__version__ = "0.1.0"
