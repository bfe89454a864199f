"""Errors caused by the user's input (a file, an option, a run folder), not by a bug.

The CLI prints them as one line (no traceback) and exits 2. Raise them before anything is written.
"""


class UserError(ValueError):
    """Bad input: the message names the file, line and field (or the option) at fault."""
