"""The broker's background asyncio tasks (coordinator timers, maintenance jobs): how they are stopped."""

from __future__ import annotations

import asyncio
import contextlib


async def cancel_and_wait(*tasks: asyncio.Task[None] | None) -> None:
    """Cancel every task given (None: none there), then wait for each to end; their cancellation is
    swallowed, any other exception raised."""
    started = [task for task in tasks if task is not None]
    for task in started:
        task.cancel()
    for task in started:
        with contextlib.suppress(asyncio.CancelledError):
            await task
