"""ZooKeeper's ``multiRead`` (server 3.6 and later), which kazoo does not offer: many znodes'
data in one request and one answer.

A new leader reads every record of the registry (registry/zookeeper.py). One ``get`` per znode
costs kazoo's connection thread a ``select``, a send, a read and a hand-off to its callback
thread each, in Python: ~0.4 ms a znode on an idle machine, ~0.8 ms on a loaded one, 40 s for
50,000 agents. One ``multiRead`` of a few hundred paths costs one round trip and one parse of
its answer; a few in flight at once keep the server and the connection busy.

The wire format is the ``multi`` transaction's (kazoo's ``Transaction``): each operation as a
``MultiHeader`` then its request, a closing header; the answer the same way, one result per
operation in order. Unlike a transaction a failed read fails alone: its result is the error
(``NoNodeError``...), the others are data.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import (
    GetData,
    MultiHeader,
    int_struct,
    multiheader_struct,
    read_buffer,
    stat_struct,
)
from kazoo.protocol.states import ZnodeStat

MULTI_READ = 22  # ZooDefs.OpCode.multiRead
ERROR = -1  # ZooDefs.OpCode.error: the result of an operation that failed

# One result: the data and stat of a znode, or the error that its read met.
Result = tuple[bytes, ZnodeStat] | Exception


class MultiRead(namedtuple("MultiRead", "paths")):  # kazoo's requests are namedtuples
    """A request kazoo's connection sends as it sends its own: ``type``, ``serialize`` and
    ``deserialize`` are all it asks of one."""

    type = MULTI_READ

    def serialize(self) -> bytearray:
        b = bytearray()
        for path in self.paths:
            b += multiheader_struct.pack(GetData.type, False, -1)
            b += GetData(path, None).serialize()
        b += multiheader_struct.pack(-1, True, -1)
        return b

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> list[Result]:
        results: list[Result] = []
        header, offset = MultiHeader.deserialize(data, offset)
        while not header.done:
            if header.type == GetData.type:
                body, offset = read_buffer(data, offset)
                stat = ZnodeStat._make(stat_struct.unpack_from(data, offset))
                offset += stat_struct.size
                results.append((body or b"", stat))
            elif header.type == ERROR:
                code = int_struct.unpack_from(data, offset)[0]
                offset += int_struct.size
                results.append(EXCEPTIONS[code]())
            else:
                raise ValueError(f"a multiRead answered an operation of type {header.type}")
            header, offset = MultiHeader.deserialize(data, offset)
        return results


def get_many_async(client: Any, paths: Sequence[str]) -> Any:
    """Send one multiRead of ``paths`` on ``client``'s session; an async result (kazoo's) whose
    value is one ``Result`` per path, in order."""
    result = client.handler.async_result()
    chroot = client.chroot or ""
    client._call(MultiRead([chroot + p for p in paths]), result)  # kazoo's own request path
    return result
