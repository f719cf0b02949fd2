"""Framework messages (Mesos' MESSAGE) between frameworks and their custom executors, relayed
through the master's shell as Mesos' master relays them: best effort, neither kept nor retried,
and never through the core (they change no state).

Rules:
1. A message to an executor goes on its agent's stream with the framework id of the caller's
   subscription (the agent hands it only to an executor of that framework); to an agent that
   is not connected it is dropped with a log line, as Mesos drops it.
2. A message from an executor carries the agent id of the stream it came on (not what the agent
   says) and goes to the framework's current stream; a framework not connected misses it.
3. At most ``MAX_DATA`` bytes of data: a bigger message is refused (400 on the Mesos API),
   dropped with a log line from an agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.logging import get_logger
from corral.v1 import agent_pb2, common_pb2, scheduler_pb2

if TYPE_CHECKING:
    from corral.master.runtime import MasterRuntime

log = get_logger("corral.master.framework_messages")

MAX_DATA = 1024 * 1024


def to_executor(
    rt: MasterRuntime, framework_id: str, agent_id: str, executor_id: str, data: bytes
) -> bool:
    """Rule 1; whether the message went on the agent's stream."""
    connection = rt.connection_of(agent_id)
    stream = rt.agent_streams.get(connection) if connection is not None else None
    if stream is None:
        log.info("framework_message_dropped", framework_id=framework_id, agent_id=agent_id)
        return False
    msg = agent_pb2.MasterMessage(
        framework_message=common_pb2.FrameworkMessage(
            framework_id=framework_id, agent_id=agent_id, executor_id=executor_id, data=data
        )
    )
    if rt.core.epoch:
        msg.epoch = rt.core.epoch
    stream.put(msg)
    return True


def to_framework(rt: MasterRuntime, agent_id: str, message: common_pb2.FrameworkMessage) -> None:
    """Rules 2 and 3, for a message that came on ``agent_id``'s stream."""
    if len(message.data) > MAX_DATA:
        log.warning("framework_message_too_big", agent_id=agent_id, size=len(message.data))
        return
    stream = rt.framework_streams.get(rt._stream_of_framework.get(message.framework_id, ""))
    if stream is None:
        log.info("framework_message_dropped", framework_id=message.framework_id, agent_id=agent_id)
        return
    event = scheduler_pb2.Event(message=message)
    event.message.agent_id = agent_id
    stream.put(event)
