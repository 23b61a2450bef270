"""brisk's exceptions, by meaning: callers catch `brisk.NoSuchKey` (or `FileNotFoundError`), never an
HTTP status.

Every exception raised by a service error carries what the server said: `code` (the S3 error code),
`status` (HTTP), `message`, `request_id`, `resource` and a `hint` where the cause is clear. The
native module raises these classes by name (`brisk._brisk` looks them up here), so they are plain
Python classes with the standard exceptions as second bases.
"""

from __future__ import annotations

from typing import Any


class Error(Exception):
    """Every error brisk raises."""

    code: str | None
    status: int | None
    message: str
    request_id: str | None
    resource: str | None
    hint: str | None

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        request_id: str | None = None,
        resource: str | None = None,
        hint: str | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.request_id = request_id
        self.resource = resource
        self.hint = hint
        for name, value in extra.items():
            setattr(self, name, value)


class ServiceError(Error):
    """An error the server reported that has no more specific class."""


class NoSuchKey(ServiceError, FileNotFoundError):
    """The key does not exist (`NoSuchKey`, or 404 on HEAD)."""


class NoSuchBucket(ServiceError, FileNotFoundError):
    """The bucket does not exist (`NoSuchBucket`)."""


class AccessDenied(ServiceError, PermissionError):
    """The credentials may not do this (`AccessDenied`, `InvalidAccessKeyId`, ...)."""


class SignatureDoesNotMatch(AccessDenied):
    """The server computed another signature: usually a wrong secret key."""


class ClockSkew(AccessDenied):
    """This machine's clock is more than 15 minutes from the server's."""


class WrongRegion(ServiceError):
    """The bucket lives in another region than the one requests were signed for."""


class PreconditionFailed(ServiceError):
    """A condition (`If-Match`, `If-None-Match`) did not hold."""


class NotModified(ServiceError):
    """The caller's copy is current (304)."""


class InvalidRange(ServiceError, ValueError):
    """The range starts at or past the end of the object."""


class BucketAlreadyExists(ServiceError, FileExistsError):
    """The bucket name is taken."""


class BucketNotEmpty(ServiceError, OSError):
    """The bucket still holds objects."""


class Throttled(ServiceError):
    """The server kept asking to slow down (`SlowDown`) after the retries."""


class ServerError(ServiceError):
    """The server kept failing (5xx) after the retries."""


class ObjectChanged(Error):
    """The object changed while it was being read in several requests."""


class ChecksumMismatch(Error):
    """The bytes received do not match the checksum the server stored: they must not be used."""


class BufferTooSmall(Error, ValueError):
    """The object (or range) is larger than the buffer it was to be read into."""


class MemoryBudgetExceeded(Error, MemoryError):
    """The memory budget can not hold the buffer asked for: larger than the whole budget, or not
    free within `memory_timeout`."""


class ConnectionFailed(Error, ConnectionError):
    """Connecting, the TLS handshake or the HTTP exchange failed (after the retries)."""


class Timeout(ConnectionFailed, TimeoutError):
    """Connecting or waiting for the server took longer than allowed."""


class ConfigError(Error, ValueError):
    """The configuration is unusable (a malformed endpoint, a missing profile, ...)."""


class InvalidArgument(Error, ValueError):
    """A key, bucket or option is not valid."""


class LocalFileError(Error, OSError):
    """A local file could not be read or written."""


class RangeErrors(Error):
    """Some ranges of a `get_ranges` batch failed; the others completed.

    `errors` maps the index of each failing range to its exception; `results` holds what arrived,
    index by index (a Buffer, or the byte count with `into`; None where the range failed).
    """

    errors: dict[int, Error]
    results: list[Any]


__all__ = [name for name, value in dict(globals()).items() if isinstance(value, type) and issubclass(value, Error)]
