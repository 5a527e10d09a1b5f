"""Exceptions raised by :mod:`kbackends`."""


class BackendUnavailableError(RuntimeError):
    """A backend was asked for but cannot start on this machine.

    The message always says why (a missing package, no GPU, ...), so the user
    knows what to install or which backend to pick instead.
    """
