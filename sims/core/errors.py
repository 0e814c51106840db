"""The one user-facing error type of the workbench."""


class WorkbenchError(ValueError):
    """A user-facing error: the CLI prints its message on one line and exits non-zero."""
