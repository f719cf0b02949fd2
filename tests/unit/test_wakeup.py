"""corral.wakeup.Wakeup: asyncio.Event's set / clear / wait for one waiter."""

from __future__ import annotations

import asyncio

import pytest

from corral.wakeup import Wakeup


async def test_a_set_flag_does_not_wait() -> None:
    wake = Wakeup()
    wake.set()
    assert wake.is_set()
    await asyncio.wait_for(wake.wait(), timeout=5)  # returns without anyone setting it again
    wake.clear()
    assert not wake.is_set()


async def test_set_wakes_the_waiter_and_clear_lowers_the_flag() -> None:
    wake = Wakeup()
    waiter = asyncio.ensure_future(wake.wait())
    await asyncio.sleep(0)
    assert not waiter.done(), "wait returned before set"
    wake.set()
    await asyncio.wait_for(waiter, timeout=5)
    wake.clear()
    again = asyncio.ensure_future(wake.wait())
    await asyncio.sleep(0)
    assert not again.done(), "a cleared flag let the next wait through"
    wake.set()
    wake.clear()  # set then cleared before the waiter ran: it was woken, as asyncio.Event's is
    await asyncio.wait_for(again, timeout=5)


async def test_a_second_waiter_is_a_bug() -> None:
    wake = Wakeup()
    first = asyncio.ensure_future(wake.wait())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="already waiting"):
        await wake.wait()
    wake.set()
    await asyncio.wait_for(first, timeout=5)


async def test_a_cancelled_waiter_leaves_room_for_the_next() -> None:
    wake = Wakeup()
    first = asyncio.ensure_future(wake.wait())
    await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    second = asyncio.ensure_future(wake.wait())
    await asyncio.sleep(0)
    wake.set()
    await asyncio.wait_for(second, timeout=5)
