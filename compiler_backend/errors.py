"""The compiler's user-facing error types.

Lowering, the passes and the code generators raise :class:`CompileError` with a message
and no position; the front end (or, for whole-kernel limits such as registers,
:func:`simtgpu.compiler_backend.compiler.compile_function`) turns it into a
:class:`simtgpu.errors.SourceError` at the kernel's file, line and column with
:meth:`CompileError.at`, which the CLI prints as ``file:line:col: error: message``.
"""

from __future__ import annotations

from simtgpu.errors import SimtgpuError, SourceError, SourceLocation


class KernelError(SourceError):
    """A mistake at a place in a kernel's source: ``str()`` is ``file:line:col: message``
    (``.message`` is the message alone), so an uncaught error names the place."""

    def __str__(self) -> str:
        return f"{self.loc}: {self.message}"


class CompileError(SimtgpuError):
    """A user mistake in a kernel, or a limit of the target, before its position is known."""

    def at(self, loc: SourceLocation, prefix: str = "") -> KernelError:
        """This error placed at ``loc`` (the message after ``prefix``)."""
        return KernelError(loc, f"{prefix}{self}")
