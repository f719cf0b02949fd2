from corral.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AgentMessage(_message.Message):
    __slots__ = ("register", "heartbeat", "status_updates", "usage")
    REGISTER_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    STATUS_UPDATES_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    register: Register
    heartbeat: AgentHeartbeat
    status_updates: StatusUpdates
    usage: UsageReport
    def __init__(self, register: _Optional[_Union[Register, _Mapping]] = ..., heartbeat: _Optional[_Union[AgentHeartbeat, _Mapping]] = ..., status_updates: _Optional[_Union[StatusUpdates, _Mapping]] = ..., usage: _Optional[_Union[UsageReport, _Mapping]] = ...) -> None: ...

class UsageReport(_message.Message):
    __slots__ = ("agent", "tasks")
    AGENT_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    agent: _common_pb2.AgentUsage
    tasks: _containers.RepeatedCompositeFieldContainer[_common_pb2.TaskUsage]
    def __init__(self, agent: _Optional[_Union[_common_pb2.AgentUsage, _Mapping]] = ..., tasks: _Optional[_Iterable[_Union[_common_pb2.TaskUsage, _Mapping]]] = ...) -> None: ...

class Register(_message.Message):
    __slots__ = ("info", "tasks", "task_statuses", "secret")
    INFO_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    TASK_STATUSES_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    info: _common_pb2.AgentInfo
    tasks: _containers.RepeatedCompositeFieldContainer[_common_pb2.TaskInfo]
    task_statuses: _containers.RepeatedCompositeFieldContainer[_common_pb2.TaskStatus]
    secret: str
    def __init__(self, info: _Optional[_Union[_common_pb2.AgentInfo, _Mapping]] = ..., tasks: _Optional[_Iterable[_Union[_common_pb2.TaskInfo, _Mapping]]] = ..., task_statuses: _Optional[_Iterable[_Union[_common_pb2.TaskStatus, _Mapping]]] = ..., secret: _Optional[str] = ...) -> None: ...

class AgentHeartbeat(_message.Message):
    __slots__ = ("timestamp",)
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    timestamp: float
    def __init__(self, timestamp: _Optional[float] = ...) -> None: ...

class StatusUpdates(_message.Message):
    __slots__ = ("statuses",)
    STATUSES_FIELD_NUMBER: _ClassVar[int]
    statuses: _containers.RepeatedCompositeFieldContainer[_common_pb2.TaskStatus]
    def __init__(self, statuses: _Optional[_Iterable[_Union[_common_pb2.TaskStatus, _Mapping]]] = ...) -> None: ...

class MasterMessage(_message.Message):
    __slots__ = ("registered", "launch_tasks", "kill_tasks", "acknowledgements", "shutdown", "heartbeat_interval", "epoch")
    REGISTERED_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_TASKS_FIELD_NUMBER: _ClassVar[int]
    KILL_TASKS_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGEMENTS_FIELD_NUMBER: _ClassVar[int]
    SHUTDOWN_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    registered: Registered
    launch_tasks: LaunchTasks
    kill_tasks: KillTasks
    acknowledgements: StatusAcknowledgements
    shutdown: Shutdown
    heartbeat_interval: HeartbeatInterval
    epoch: int
    def __init__(self, registered: _Optional[_Union[Registered, _Mapping]] = ..., launch_tasks: _Optional[_Union[LaunchTasks, _Mapping]] = ..., kill_tasks: _Optional[_Union[KillTasks, _Mapping]] = ..., acknowledgements: _Optional[_Union[StatusAcknowledgements, _Mapping]] = ..., shutdown: _Optional[_Union[Shutdown, _Mapping]] = ..., heartbeat_interval: _Optional[_Union[HeartbeatInterval, _Mapping]] = ..., epoch: _Optional[int] = ...) -> None: ...

class Registered(_message.Message):
    __slots__ = ("agent_id", "master_id", "heartbeat_interval_seconds", "secret")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    master_id: str
    heartbeat_interval_seconds: float
    secret: str
    def __init__(self, agent_id: _Optional[str] = ..., master_id: _Optional[str] = ..., heartbeat_interval_seconds: _Optional[float] = ..., secret: _Optional[str] = ...) -> None: ...

class HeartbeatInterval(_message.Message):
    __slots__ = ("seconds",)
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    seconds: float
    def __init__(self, seconds: _Optional[float] = ...) -> None: ...

class LaunchTasks(_message.Message):
    __slots__ = ("framework_id", "tasks")
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    framework_id: str
    tasks: _containers.RepeatedCompositeFieldContainer[_common_pb2.TaskInfo]
    def __init__(self, framework_id: _Optional[str] = ..., tasks: _Optional[_Iterable[_Union[_common_pb2.TaskInfo, _Mapping]]] = ...) -> None: ...

class KillTask(_message.Message):
    __slots__ = ("framework_id", "task_id", "kill_grace_period_seconds")
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    KILL_GRACE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    framework_id: str
    task_id: str
    kill_grace_period_seconds: float
    def __init__(self, framework_id: _Optional[str] = ..., task_id: _Optional[str] = ..., kill_grace_period_seconds: _Optional[float] = ...) -> None: ...

class KillTasks(_message.Message):
    __slots__ = ("kills",)
    KILLS_FIELD_NUMBER: _ClassVar[int]
    kills: _containers.RepeatedCompositeFieldContainer[KillTask]
    def __init__(self, kills: _Optional[_Iterable[_Union[KillTask, _Mapping]]] = ...) -> None: ...

class StatusAcknowledgements(_message.Message):
    __slots__ = ("acknowledgements",)
    ACKNOWLEDGEMENTS_FIELD_NUMBER: _ClassVar[int]
    acknowledgements: _containers.RepeatedCompositeFieldContainer[StatusAcknowledgement]
    def __init__(self, acknowledgements: _Optional[_Iterable[_Union[StatusAcknowledgement, _Mapping]]] = ...) -> None: ...

class StatusAcknowledgement(_message.Message):
    __slots__ = ("task_id", "uuid")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    uuid: bytes
    def __init__(self, task_id: _Optional[str] = ..., uuid: _Optional[bytes] = ...) -> None: ...

class Shutdown(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...
