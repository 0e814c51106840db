"""The user-facing error types of the workbench: the CLI prints their message on one line and exits with their
``exit_status``, without a traceback."""


class WorkbenchError(ValueError):
    """A user error (a bad name, value or ``--out``): the CLI prints it on one line and exits 2."""

    exit_status = 2


class OutputError(WorkbenchError):
    """An output folder that cannot be written (a full disk, a file too large, a name too long, no permission) or a
    committed one that is damaged or inconsistent: one line naming the file, exit 1."""

    exit_status = 1


class Terminated(BaseException):
    """Raised by the CLI's SIGTERM handler, so that a terminated run unwinds like an interrupted one (its temporary
    folder removed) and exits 143. A BaseException, like KeyboardInterrupt, so that no ``except Exception`` in a
    simulation swallows it."""
