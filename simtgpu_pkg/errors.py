"""Error types shared by every tool. User mistakes raise these; the CLI prints them once,
at its edge, as ``file:line:col: error: message`` and exits 1, never with a traceback."""

from __future__ import annotations

from dataclasses import dataclass


class SimtgpuError(Exception):
    """Base of every error that is the user's to fix (bad input, misuse, kernel fault)."""

    def render(self) -> str:
        return f"error: {self}"


@dataclass
class SourceLocation:
    file: str
    line: int  # 1-based
    col: int  # 1-based
    source_line: str | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class SourceError(SimtgpuError):
    """A mistake at a place in a source file."""

    def __init__(self, loc: SourceLocation, message: str):
        super().__init__(message)
        self.loc = loc
        self.message = message

    def render(self) -> str:
        out = f"{self.loc}: error: {self.message}"
        if self.loc.source_line is not None:
            line = self.loc.source_line.rstrip("\n").expandtabs(8)
            out += f"\n    {line}\n    {' ' * (self.loc.col - 1)}^"
        return out


class SourceErrors(SimtgpuError):
    """Several source errors from one run, reported together."""

    def __init__(self, errors: list[SourceError]):
        super().__init__(f"{len(errors)} error(s)")
        self.errors = errors

    def render(self) -> str:
        return "\n".join(e.render() for e in self.errors)
