"""Helpers of the native module's asyncio bridge (`src/aio.rs`)."""

from __future__ import annotations

import asyncio
from typing import Any


def settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    """Runs on the event loop's thread: completes `future` unless it was cancelled meanwhile."""
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
