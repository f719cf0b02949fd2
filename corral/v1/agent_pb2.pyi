from corral.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SandboxReadError(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SANDBOX_READ_ERROR_NONE: _ClassVar[SandboxReadError]
    SANDBOX_READ_ERROR_NOT_FOUND: _ClassVar[SandboxReadError]
    SANDBOX_READ_ERROR_INVALID: _ClassVar[SandboxReadError]
    SANDBOX_READ_ERROR_UNSUPPORTED: _ClassVar[SandboxReadError]
    SANDBOX_READ_ERROR_IO: _ClassVar[SandboxReadError]
SANDBOX_READ_ERROR_NONE: SandboxReadError
SANDBOX_READ_ERROR_NOT_FOUND: SandboxReadError
SANDBOX_READ_ERROR_INVALID: SandboxReadError
SANDBOX_READ_ERROR_UNSUPPORTED: SandboxReadError
SANDBOX_READ_ERROR_IO: SandboxReadError

class AgentMessage(_message.Message):
    __slots__ = ("register", "heartbeat", "status_updates", "file_chunk", "usage", "framework_message", "executor_terminated")
    REGISTER_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    STATUS_UPDATES_FIELD_NUMBER: _ClassVar[int]
    FILE_CHUNK_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_TERMINATED_FIELD_NUMBER: _ClassVar[int]
    register: Register
    heartbeat: AgentHeartbeat
    status_updates: StatusUpdates
    file_chunk: SandboxFileChunk
    usage: UsageReport
    framework_message: _common_pb2.FrameworkMessage
    executor_terminated: _common_pb2.ExecutorTerminated
    def __init__(self, register: _Optional[_Union[Register, _Mapping]] = ..., heartbeat: _Optional[_Union[AgentHeartbeat, _Mapping]] = ..., status_updates: _Optional[_Union[StatusUpdates, _Mapping]] = ..., file_chunk: _Optional[_Union[SandboxFileChunk, _Mapping]] = ..., usage: _Optional[_Union[UsageReport, _Mapping]] = ..., framework_message: _Optional[_Union[_common_pb2.FrameworkMessage, _Mapping]] = ..., executor_terminated: _Optional[_Union[_common_pb2.ExecutorTerminated, _Mapping]] = ...) -> None: ...

class UsageReport(_message.Message):
    __slots__ = ("agent", "tasks")
    AGENT_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    agent: _common_pb2.AgentUsage
    tasks: _containers.RepeatedCompositeFieldContainer[_common_pb2.TaskUsage]
    def __init__(self, agent: _Optional[_Union[_common_pb2.AgentUsage, _Mapping]] = ..., tasks: _Optional[_Iterable[_Union[_common_pb2.TaskUsage, _Mapping]]] = ...) -> None: ...

class Register(_message.Message):
    __slots__ = ("info", "tasks", "task_statuses", "secret", "status_retry_seconds")
    INFO_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    TASK_STATUSES_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    STATUS_RETRY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    info: _common_pb2.AgentInfo
    tasks: _containers.RepeatedCompositeFieldContainer[_common_pb2.TaskInfo]
    task_statuses: _containers.RepeatedCompositeFieldContainer[_common_pb2.TaskStatus]
    secret: str
    status_retry_seconds: float
    def __init__(self, info: _Optional[_Union[_common_pb2.AgentInfo, _Mapping]] = ..., tasks: _Optional[_Iterable[_Union[_common_pb2.TaskInfo, _Mapping]]] = ..., task_statuses: _Optional[_Iterable[_Union[_common_pb2.TaskStatus, _Mapping]]] = ..., secret: _Optional[str] = ..., status_retry_seconds: _Optional[float] = ...) -> None: ...

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
    __slots__ = ("registered", "launch_tasks", "kill_tasks", "acknowledgements", "shutdown", "heartbeat_interval", "read_file", "framework_message", "epoch")
    REGISTERED_FIELD_NUMBER: _ClassVar[int]
    LAUNCH_TASKS_FIELD_NUMBER: _ClassVar[int]
    KILL_TASKS_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGEMENTS_FIELD_NUMBER: _ClassVar[int]
    SHUTDOWN_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    READ_FILE_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    registered: Registered
    launch_tasks: LaunchTasks
    kill_tasks: KillTasks
    acknowledgements: StatusAcknowledgements
    shutdown: Shutdown
    heartbeat_interval: HeartbeatInterval
    read_file: ReadSandboxFile
    framework_message: _common_pb2.FrameworkMessage
    epoch: int
    def __init__(self, registered: _Optional[_Union[Registered, _Mapping]] = ..., launch_tasks: _Optional[_Union[LaunchTasks, _Mapping]] = ..., kill_tasks: _Optional[_Union[KillTasks, _Mapping]] = ..., acknowledgements: _Optional[_Union[StatusAcknowledgements, _Mapping]] = ..., shutdown: _Optional[_Union[Shutdown, _Mapping]] = ..., heartbeat_interval: _Optional[_Union[HeartbeatInterval, _Mapping]] = ..., read_file: _Optional[_Union[ReadSandboxFile, _Mapping]] = ..., framework_message: _Optional[_Union[_common_pb2.FrameworkMessage, _Mapping]] = ..., epoch: _Optional[int] = ...) -> None: ...

class Registered(_message.Message):
    __slots__ = ("agent_id", "master_id", "heartbeat_interval_seconds", "secret", "principal")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    master_id: str
    heartbeat_interval_seconds: float
    secret: str
    principal: str
    def __init__(self, agent_id: _Optional[str] = ..., master_id: _Optional[str] = ..., heartbeat_interval_seconds: _Optional[float] = ..., secret: _Optional[str] = ..., principal: _Optional[str] = ...) -> None: ...

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
    __slots__ = ("task_id", "uuid", "framework_id")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    uuid: bytes
    framework_id: str
    def __init__(self, task_id: _Optional[str] = ..., uuid: _Optional[bytes] = ..., framework_id: _Optional[str] = ...) -> None: ...

class Shutdown(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class ReadSandboxFile(_message.Message):
    __slots__ = ("request_id", "framework_id", "task_id", "path", "offset", "tail_lines", "max_bytes")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TAIL_LINES_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    framework_id: str
    task_id: str
    path: str
    offset: int
    tail_lines: int
    max_bytes: int
    def __init__(self, request_id: _Optional[int] = ..., framework_id: _Optional[str] = ..., task_id: _Optional[str] = ..., path: _Optional[str] = ..., offset: _Optional[int] = ..., tail_lines: _Optional[int] = ..., max_bytes: _Optional[int] = ...) -> None: ...

class SandboxFileChunk(_message.Message):
    __slots__ = ("request_id", "data", "offset", "size", "error", "message")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    data: bytes
    offset: int
    size: int
    error: SandboxReadError
    message: str
    def __init__(self, request_id: _Optional[int] = ..., data: _Optional[bytes] = ..., offset: _Optional[int] = ..., size: _Optional[int] = ..., error: _Optional[_Union[SandboxReadError, str]] = ..., message: _Optional[str] = ...) -> None: ...
