"""Exception families of gemmsim.

Every error a user can cause (a bad machine file, a bad experiment, a malformed trace, an impossible
kernel launch) is raised as one of these, carrying where the problem is (file, field path or line
number) and what was expected. The library never prints and never exits; the CLI turns these into one
clear message and a non-zero exit code, without a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence


class GemmsimError(Exception):
    """Base class of every error gemmsim raises on bad input."""

    def __init__(self, message: str, *, source: str | None = None, problems: Sequence[str] = ()):
        self.message = message
        self.source = source
        self.problems = list(problems)
        super().__init__(self.render())

    def render(self) -> str:
        """The whole message: where, what, and every individual problem on its own line."""
        head = f"{self.source}: {self.message}" if self.source else self.message
        if not self.problems:
            return head
        return head + "\n" + "\n".join(f"  - {p}" for p in self.problems)


class MachineFileError(GemmsimError):
    """A machine file (or machine name) is missing, malformed or inconsistent."""


class ExperimentError(GemmsimError):
    """An experiment file is malformed, or names machines, kernels or parameters that do not exist."""


class TraceFormatError(GemmsimError):
    """A trace file has a line that is not in the declared format."""


class KernelError(GemmsimError):
    """A kernel was asked for with parameters that cannot describe a valid kernel."""


class LaunchError(GemmsimError):
    """A GPU launch that the hardware refuses (too many threads, registers or shared memory)."""


class ResultsError(GemmsimError):
    """A results folder is missing files or cannot be read back."""


class OutputError(GemmsimError):
    """An output path (results folder, trace file, cache folder, machine file) cannot be created or written."""


def output_error(exc: OSError, path, what: str = "cannot write") -> OutputError:
    """An OutputError for an OSError met while writing ``path``: the path and the system's reason, no traceback."""
    where = getattr(exc, "filename", None) or path
    return OutputError(f"{what}: {exc.strerror or exc}", source=str(where))


def wrong_kind(machine, kind: str, command: str) -> MachineFileError:
    """The error for a machine of the wrong kind, worded the same from the command line and from Python."""
    got = getattr(machine, "kind", None) or type(machine).__name__
    name = getattr(machine, "name", str(machine))
    return MachineFileError(f"machine {name!r} is a {got} machine; the {command} command needs kind: {kind}")
