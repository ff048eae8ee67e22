"""Exceptions raised for the library's status codes.

Each status has its own class, deriving from AiterError and from the built-in
exception a Python user would expect (ValueError for bad arguments,
RuntimeError for device trouble), so both ``except aiter.AiterError`` and
``except ValueError`` work.
"""


class AiterError(Exception):
    """A libaiter call failed; ``status`` is the C status code."""

    status = -1

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status


class InvalidArgumentError(AiterError, ValueError):
    status = 1


class UnsupportedDtypeError(AiterError, ValueError):
    status = 2


class UnsupportedShapeError(AiterError, ValueError):
    status = 3


class NoDeviceError(AiterError, RuntimeError):
    status = 4


class NoKernelError(AiterError, RuntimeError):
    status = 5


class OutOfMemoryError(AiterError, MemoryError):
    status = 6


class DeviceError(AiterError, RuntimeError):
    status = 7


class InternalError(AiterError, RuntimeError):
    status = 8


_BY_STATUS = {cls.status: cls for cls in (
    InvalidArgumentError, UnsupportedDtypeError, UnsupportedShapeError, NoDeviceError,
    NoKernelError, OutOfMemoryError, DeviceError, InternalError)}


def error_for_status(status, message):
    """The exception instance for a failed call's status and message."""
    cls = _BY_STATUS.get(status, AiterError)
    return cls(message, status)
