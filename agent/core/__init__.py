"""The agent's sans-IO core: task lifecycle and status-update manager (events in, commands out).

See ``machine.py`` for the rules. Nothing here imports asyncio, grpc, time, random or sockets.
"""

from corral.agent.core.machine import AgentCore, AgentCoreConfig
from corral.agent.core.states import IllegalTransition

__all__ = ["AgentCore", "AgentCoreConfig", "IllegalTransition"]
