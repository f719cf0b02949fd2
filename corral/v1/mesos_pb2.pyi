from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TaskState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_STAGING: _ClassVar[TaskState]
    TASK_STARTING: _ClassVar[TaskState]
    TASK_RUNNING: _ClassVar[TaskState]
    TASK_KILLING: _ClassVar[TaskState]
    TASK_FINISHED: _ClassVar[TaskState]
    TASK_FAILED: _ClassVar[TaskState]
    TASK_KILLED: _ClassVar[TaskState]
    TASK_ERROR: _ClassVar[TaskState]
    TASK_LOST: _ClassVar[TaskState]
    TASK_DROPPED: _ClassVar[TaskState]
    TASK_UNREACHABLE: _ClassVar[TaskState]
    TASK_GONE: _ClassVar[TaskState]
    TASK_GONE_BY_OPERATOR: _ClassVar[TaskState]
    TASK_UNKNOWN: _ClassVar[TaskState]
TASK_STAGING: TaskState
TASK_STARTING: TaskState
TASK_RUNNING: TaskState
TASK_KILLING: TaskState
TASK_FINISHED: TaskState
TASK_FAILED: TaskState
TASK_KILLED: TaskState
TASK_ERROR: TaskState
TASK_LOST: TaskState
TASK_DROPPED: TaskState
TASK_UNREACHABLE: TaskState
TASK_GONE: TaskState
TASK_GONE_BY_OPERATOR: TaskState
TASK_UNKNOWN: TaskState

class FrameworkID(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: str
    def __init__(self, value: _Optional[str] = ...) -> None: ...

class OfferID(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: str
    def __init__(self, value: _Optional[str] = ...) -> None: ...

class AgentID(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: str
    def __init__(self, value: _Optional[str] = ...) -> None: ...

class TaskID(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: str
    def __init__(self, value: _Optional[str] = ...) -> None: ...

class ExecutorID(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: str
    def __init__(self, value: _Optional[str] = ...) -> None: ...

class DurationInfo(_message.Message):
    __slots__ = ("nanoseconds",)
    NANOSECONDS_FIELD_NUMBER: _ClassVar[int]
    nanoseconds: int
    def __init__(self, nanoseconds: _Optional[int] = ...) -> None: ...

class Address(_message.Message):
    __slots__ = ("hostname", "ip", "port")
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    IP_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    hostname: str
    ip: str
    port: int
    def __init__(self, hostname: _Optional[str] = ..., ip: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class MasterInfo(_message.Message):
    __slots__ = ("id", "ip", "port", "pid", "hostname", "version", "address")
    ID_FIELD_NUMBER: _ClassVar[int]
    IP_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    id: str
    ip: int
    port: int
    pid: str
    hostname: str
    version: str
    address: Address
    def __init__(self, id: _Optional[str] = ..., ip: _Optional[int] = ..., port: _Optional[int] = ..., pid: _Optional[str] = ..., hostname: _Optional[str] = ..., version: _Optional[str] = ..., address: _Optional[_Union[Address, _Mapping]] = ...) -> None: ...

class Label(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class Labels(_message.Message):
    __slots__ = ("labels",)
    LABELS_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.RepeatedCompositeFieldContainer[Label]
    def __init__(self, labels: _Optional[_Iterable[_Union[Label, _Mapping]]] = ...) -> None: ...

class FrameworkInfo(_message.Message):
    __slots__ = ("user", "name", "id", "failover_timeout", "checkpoint", "role", "roles", "hostname", "principal", "webui_url", "capabilities", "labels")
    class Capability(_message.Message):
        __slots__ = ("type",)
        class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            UNKNOWN: _ClassVar[FrameworkInfo.Capability.Type]
            REVOCABLE_RESOURCES: _ClassVar[FrameworkInfo.Capability.Type]
            TASK_KILLING_STATE: _ClassVar[FrameworkInfo.Capability.Type]
            GPU_RESOURCES: _ClassVar[FrameworkInfo.Capability.Type]
            SHARED_RESOURCES: _ClassVar[FrameworkInfo.Capability.Type]
            PARTITION_AWARE: _ClassVar[FrameworkInfo.Capability.Type]
            MULTI_ROLE: _ClassVar[FrameworkInfo.Capability.Type]
            RESERVATION_REFINEMENT: _ClassVar[FrameworkInfo.Capability.Type]
            REGION_AWARE: _ClassVar[FrameworkInfo.Capability.Type]
        UNKNOWN: FrameworkInfo.Capability.Type
        REVOCABLE_RESOURCES: FrameworkInfo.Capability.Type
        TASK_KILLING_STATE: FrameworkInfo.Capability.Type
        GPU_RESOURCES: FrameworkInfo.Capability.Type
        SHARED_RESOURCES: FrameworkInfo.Capability.Type
        PARTITION_AWARE: FrameworkInfo.Capability.Type
        MULTI_ROLE: FrameworkInfo.Capability.Type
        RESERVATION_REFINEMENT: FrameworkInfo.Capability.Type
        REGION_AWARE: FrameworkInfo.Capability.Type
        TYPE_FIELD_NUMBER: _ClassVar[int]
        type: FrameworkInfo.Capability.Type
        def __init__(self, type: _Optional[_Union[FrameworkInfo.Capability.Type, str]] = ...) -> None: ...
    USER_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    FAILOVER_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    WEBUI_URL_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    user: str
    name: str
    id: FrameworkID
    failover_timeout: float
    checkpoint: bool
    role: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    hostname: str
    principal: str
    webui_url: str
    capabilities: _containers.RepeatedCompositeFieldContainer[FrameworkInfo.Capability]
    labels: Labels
    def __init__(self, user: _Optional[str] = ..., name: _Optional[str] = ..., id: _Optional[_Union[FrameworkID, _Mapping]] = ..., failover_timeout: _Optional[float] = ..., checkpoint: _Optional[bool] = ..., role: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., hostname: _Optional[str] = ..., principal: _Optional[str] = ..., webui_url: _Optional[str] = ..., capabilities: _Optional[_Iterable[_Union[FrameworkInfo.Capability, _Mapping]]] = ..., labels: _Optional[_Union[Labels, _Mapping]] = ...) -> None: ...

class Value(_message.Message):
    __slots__ = ("type", "scalar", "ranges", "set", "text")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SCALAR: _ClassVar[Value.Type]
        RANGES: _ClassVar[Value.Type]
        SET: _ClassVar[Value.Type]
        TEXT: _ClassVar[Value.Type]
    SCALAR: Value.Type
    RANGES: Value.Type
    SET: Value.Type
    TEXT: Value.Type
    class Scalar(_message.Message):
        __slots__ = ("value",)
        VALUE_FIELD_NUMBER: _ClassVar[int]
        value: float
        def __init__(self, value: _Optional[float] = ...) -> None: ...
    class Range(_message.Message):
        __slots__ = ("begin", "end")
        BEGIN_FIELD_NUMBER: _ClassVar[int]
        END_FIELD_NUMBER: _ClassVar[int]
        begin: int
        end: int
        def __init__(self, begin: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...
    class Ranges(_message.Message):
        __slots__ = ("range",)
        RANGE_FIELD_NUMBER: _ClassVar[int]
        range: _containers.RepeatedCompositeFieldContainer[Value.Range]
        def __init__(self, range: _Optional[_Iterable[_Union[Value.Range, _Mapping]]] = ...) -> None: ...
    class Set(_message.Message):
        __slots__ = ("item",)
        ITEM_FIELD_NUMBER: _ClassVar[int]
        item: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, item: _Optional[_Iterable[str]] = ...) -> None: ...
    class Text(_message.Message):
        __slots__ = ("value",)
        VALUE_FIELD_NUMBER: _ClassVar[int]
        value: str
        def __init__(self, value: _Optional[str] = ...) -> None: ...
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SCALAR_FIELD_NUMBER: _ClassVar[int]
    RANGES_FIELD_NUMBER: _ClassVar[int]
    SET_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    type: Value.Type
    scalar: Value.Scalar
    ranges: Value.Ranges
    set: Value.Set
    text: Value.Text
    def __init__(self, type: _Optional[_Union[Value.Type, str]] = ..., scalar: _Optional[_Union[Value.Scalar, _Mapping]] = ..., ranges: _Optional[_Union[Value.Ranges, _Mapping]] = ..., set: _Optional[_Union[Value.Set, _Mapping]] = ..., text: _Optional[_Union[Value.Text, _Mapping]] = ...) -> None: ...

class Attribute(_message.Message):
    __slots__ = ("name", "type", "scalar", "ranges", "set", "text")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SCALAR_FIELD_NUMBER: _ClassVar[int]
    RANGES_FIELD_NUMBER: _ClassVar[int]
    SET_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: Value.Type
    scalar: Value.Scalar
    ranges: Value.Ranges
    set: Value.Set
    text: Value.Text
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[Value.Type, str]] = ..., scalar: _Optional[_Union[Value.Scalar, _Mapping]] = ..., ranges: _Optional[_Union[Value.Ranges, _Mapping]] = ..., set: _Optional[_Union[Value.Set, _Mapping]] = ..., text: _Optional[_Union[Value.Text, _Mapping]] = ...) -> None: ...

class Resource(_message.Message):
    __slots__ = ("name", "type", "scalar", "ranges", "set", "role", "allocation_info", "reservation", "reservations", "disk", "revocable", "shared")
    class AllocationInfo(_message.Message):
        __slots__ = ("role",)
        ROLE_FIELD_NUMBER: _ClassVar[int]
        role: str
        def __init__(self, role: _Optional[str] = ...) -> None: ...
    class ReservationInfo(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    class DiskInfo(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    class RevocableInfo(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    class SharedInfo(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SCALAR_FIELD_NUMBER: _ClassVar[int]
    RANGES_FIELD_NUMBER: _ClassVar[int]
    SET_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_INFO_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_FIELD_NUMBER: _ClassVar[int]
    RESERVATIONS_FIELD_NUMBER: _ClassVar[int]
    DISK_FIELD_NUMBER: _ClassVar[int]
    REVOCABLE_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: Value.Type
    scalar: Value.Scalar
    ranges: Value.Ranges
    set: Value.Set
    role: str
    allocation_info: Resource.AllocationInfo
    reservation: Resource.ReservationInfo
    reservations: _containers.RepeatedCompositeFieldContainer[Resource.ReservationInfo]
    disk: Resource.DiskInfo
    revocable: Resource.RevocableInfo
    shared: Resource.SharedInfo
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[Value.Type, str]] = ..., scalar: _Optional[_Union[Value.Scalar, _Mapping]] = ..., ranges: _Optional[_Union[Value.Ranges, _Mapping]] = ..., set: _Optional[_Union[Value.Set, _Mapping]] = ..., role: _Optional[str] = ..., allocation_info: _Optional[_Union[Resource.AllocationInfo, _Mapping]] = ..., reservation: _Optional[_Union[Resource.ReservationInfo, _Mapping]] = ..., reservations: _Optional[_Iterable[_Union[Resource.ReservationInfo, _Mapping]]] = ..., disk: _Optional[_Union[Resource.DiskInfo, _Mapping]] = ..., revocable: _Optional[_Union[Resource.RevocableInfo, _Mapping]] = ..., shared: _Optional[_Union[Resource.SharedInfo, _Mapping]] = ...) -> None: ...

class Filters(_message.Message):
    __slots__ = ("refuse_seconds",)
    REFUSE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    refuse_seconds: float
    def __init__(self, refuse_seconds: _Optional[float] = ...) -> None: ...

class Secret(_message.Message):
    __slots__ = ("type", "reference", "value")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[Secret.Type]
        REFERENCE: _ClassVar[Secret.Type]
        VALUE: _ClassVar[Secret.Type]
    UNKNOWN: Secret.Type
    REFERENCE: Secret.Type
    VALUE: Secret.Type
    class Reference(_message.Message):
        __slots__ = ("name", "key")
        NAME_FIELD_NUMBER: _ClassVar[int]
        KEY_FIELD_NUMBER: _ClassVar[int]
        name: str
        key: str
        def __init__(self, name: _Optional[str] = ..., key: _Optional[str] = ...) -> None: ...
    class Value(_message.Message):
        __slots__ = ("data",)
        DATA_FIELD_NUMBER: _ClassVar[int]
        data: bytes
        def __init__(self, data: _Optional[bytes] = ...) -> None: ...
    TYPE_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    type: Secret.Type
    reference: Secret.Reference
    value: Secret.Value
    def __init__(self, type: _Optional[_Union[Secret.Type, str]] = ..., reference: _Optional[_Union[Secret.Reference, _Mapping]] = ..., value: _Optional[_Union[Secret.Value, _Mapping]] = ...) -> None: ...

class Environment(_message.Message):
    __slots__ = ("variables",)
    class Variable(_message.Message):
        __slots__ = ("name", "type", "value", "secret")
        class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            UNKNOWN: _ClassVar[Environment.Variable.Type]
            VALUE: _ClassVar[Environment.Variable.Type]
            SECRET: _ClassVar[Environment.Variable.Type]
        UNKNOWN: Environment.Variable.Type
        VALUE: Environment.Variable.Type
        SECRET: Environment.Variable.Type
        NAME_FIELD_NUMBER: _ClassVar[int]
        TYPE_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        SECRET_FIELD_NUMBER: _ClassVar[int]
        name: str
        type: Environment.Variable.Type
        value: str
        secret: Secret
        def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[Environment.Variable.Type, str]] = ..., value: _Optional[str] = ..., secret: _Optional[_Union[Secret, _Mapping]] = ...) -> None: ...
    VARIABLES_FIELD_NUMBER: _ClassVar[int]
    variables: _containers.RepeatedCompositeFieldContainer[Environment.Variable]
    def __init__(self, variables: _Optional[_Iterable[_Union[Environment.Variable, _Mapping]]] = ...) -> None: ...

class CommandInfo(_message.Message):
    __slots__ = ("uris", "environment", "shell", "value", "arguments", "user")
    class URI(_message.Message):
        __slots__ = ("value",)
        VALUE_FIELD_NUMBER: _ClassVar[int]
        value: str
        def __init__(self, value: _Optional[str] = ...) -> None: ...
    URIS_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    SHELL_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    uris: _containers.RepeatedCompositeFieldContainer[CommandInfo.URI]
    environment: Environment
    shell: bool
    value: str
    arguments: _containers.RepeatedScalarFieldContainer[str]
    user: str
    def __init__(self, uris: _Optional[_Iterable[_Union[CommandInfo.URI, _Mapping]]] = ..., environment: _Optional[_Union[Environment, _Mapping]] = ..., shell: _Optional[bool] = ..., value: _Optional[str] = ..., arguments: _Optional[_Iterable[str]] = ..., user: _Optional[str] = ...) -> None: ...

class KillPolicy(_message.Message):
    __slots__ = ("grace_period",)
    GRACE_PERIOD_FIELD_NUMBER: _ClassVar[int]
    grace_period: DurationInfo
    def __init__(self, grace_period: _Optional[_Union[DurationInfo, _Mapping]] = ...) -> None: ...

class ContainerInfo(_message.Message):
    __slots__ = ("type", "docker", "mesos")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DOCKER: _ClassVar[ContainerInfo.Type]
        MESOS: _ClassVar[ContainerInfo.Type]
    DOCKER: ContainerInfo.Type
    MESOS: ContainerInfo.Type
    class DockerInfo(_message.Message):
        __slots__ = ("image",)
        IMAGE_FIELD_NUMBER: _ClassVar[int]
        image: str
        def __init__(self, image: _Optional[str] = ...) -> None: ...
    class MesosInfo(_message.Message):
        __slots__ = ("image",)
        class Image(_message.Message):
            __slots__ = ()
            def __init__(self) -> None: ...
        IMAGE_FIELD_NUMBER: _ClassVar[int]
        image: ContainerInfo.MesosInfo.Image
        def __init__(self, image: _Optional[_Union[ContainerInfo.MesosInfo.Image, _Mapping]] = ...) -> None: ...
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DOCKER_FIELD_NUMBER: _ClassVar[int]
    MESOS_FIELD_NUMBER: _ClassVar[int]
    type: ContainerInfo.Type
    docker: ContainerInfo.DockerInfo
    mesos: ContainerInfo.MesosInfo
    def __init__(self, type: _Optional[_Union[ContainerInfo.Type, str]] = ..., docker: _Optional[_Union[ContainerInfo.DockerInfo, _Mapping]] = ..., mesos: _Optional[_Union[ContainerInfo.MesosInfo, _Mapping]] = ...) -> None: ...

class ExecutorInfo(_message.Message):
    __slots__ = ("executor_id", "framework_id", "command", "resources", "name", "data")
    EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    executor_id: ExecutorID
    framework_id: FrameworkID
    command: CommandInfo
    resources: _containers.RepeatedCompositeFieldContainer[Resource]
    name: str
    data: bytes
    def __init__(self, executor_id: _Optional[_Union[ExecutorID, _Mapping]] = ..., framework_id: _Optional[_Union[FrameworkID, _Mapping]] = ..., command: _Optional[_Union[CommandInfo, _Mapping]] = ..., resources: _Optional[_Iterable[_Union[Resource, _Mapping]]] = ..., name: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class HealthCheck(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CheckInfo(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DiscoveryInfo(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TaskInfo(_message.Message):
    __slots__ = ("name", "task_id", "agent_id", "resources", "executor", "command", "container", "health_check", "check", "kill_policy", "data", "labels", "discovery", "max_completion_time", "limits")
    class LimitsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value.Scalar
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value.Scalar, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    HEALTH_CHECK_FIELD_NUMBER: _ClassVar[int]
    CHECK_FIELD_NUMBER: _ClassVar[int]
    KILL_POLICY_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    DISCOVERY_FIELD_NUMBER: _ClassVar[int]
    MAX_COMPLETION_TIME_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    name: str
    task_id: TaskID
    agent_id: AgentID
    resources: _containers.RepeatedCompositeFieldContainer[Resource]
    executor: ExecutorInfo
    command: CommandInfo
    container: ContainerInfo
    health_check: HealthCheck
    check: CheckInfo
    kill_policy: KillPolicy
    data: bytes
    labels: Labels
    discovery: DiscoveryInfo
    max_completion_time: DurationInfo
    limits: _containers.MessageMap[str, Value.Scalar]
    def __init__(self, name: _Optional[str] = ..., task_id: _Optional[_Union[TaskID, _Mapping]] = ..., agent_id: _Optional[_Union[AgentID, _Mapping]] = ..., resources: _Optional[_Iterable[_Union[Resource, _Mapping]]] = ..., executor: _Optional[_Union[ExecutorInfo, _Mapping]] = ..., command: _Optional[_Union[CommandInfo, _Mapping]] = ..., container: _Optional[_Union[ContainerInfo, _Mapping]] = ..., health_check: _Optional[_Union[HealthCheck, _Mapping]] = ..., check: _Optional[_Union[CheckInfo, _Mapping]] = ..., kill_policy: _Optional[_Union[KillPolicy, _Mapping]] = ..., data: _Optional[bytes] = ..., labels: _Optional[_Union[Labels, _Mapping]] = ..., discovery: _Optional[_Union[DiscoveryInfo, _Mapping]] = ..., max_completion_time: _Optional[_Union[DurationInfo, _Mapping]] = ..., limits: _Optional[_Mapping[str, Value.Scalar]] = ...) -> None: ...

class TaskGroupInfo(_message.Message):
    __slots__ = ("tasks",)
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[TaskInfo]
    def __init__(self, tasks: _Optional[_Iterable[_Union[TaskInfo, _Mapping]]] = ...) -> None: ...

class TaskStatus(_message.Message):
    __slots__ = ("task_id", "state", "message", "source", "reason", "data", "agent_id", "executor_id", "timestamp", "uuid", "healthy")
    class Source(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SOURCE_MASTER: _ClassVar[TaskStatus.Source]
        SOURCE_AGENT: _ClassVar[TaskStatus.Source]
        SOURCE_EXECUTOR: _ClassVar[TaskStatus.Source]
    SOURCE_MASTER: TaskStatus.Source
    SOURCE_AGENT: TaskStatus.Source
    SOURCE_EXECUTOR: TaskStatus.Source
    class Reason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        REASON_COMMAND_EXECUTOR_FAILED: _ClassVar[TaskStatus.Reason]
        REASON_CONTAINER_LAUNCH_FAILED: _ClassVar[TaskStatus.Reason]
        REASON_CONTAINER_LIMITATION: _ClassVar[TaskStatus.Reason]
        REASON_CONTAINER_LIMITATION_DISK: _ClassVar[TaskStatus.Reason]
        REASON_CONTAINER_LIMITATION_MEMORY: _ClassVar[TaskStatus.Reason]
        REASON_CONTAINER_PREEMPTED: _ClassVar[TaskStatus.Reason]
        REASON_CONTAINER_UPDATE_FAILED: _ClassVar[TaskStatus.Reason]
        REASON_MAX_COMPLETION_TIME_REACHED: _ClassVar[TaskStatus.Reason]
        REASON_EXECUTOR_REGISTRATION_TIMEOUT: _ClassVar[TaskStatus.Reason]
        REASON_EXECUTOR_REREGISTRATION_TIMEOUT: _ClassVar[TaskStatus.Reason]
        REASON_EXECUTOR_TERMINATED: _ClassVar[TaskStatus.Reason]
        REASON_EXECUTOR_UNREGISTERED: _ClassVar[TaskStatus.Reason]
        REASON_FRAMEWORK_REMOVED: _ClassVar[TaskStatus.Reason]
        REASON_GC_ERROR: _ClassVar[TaskStatus.Reason]
        REASON_INVALID_FRAMEWORKID: _ClassVar[TaskStatus.Reason]
        REASON_INVALID_OFFERS: _ClassVar[TaskStatus.Reason]
        REASON_IO_SWITCHBOARD_EXITED: _ClassVar[TaskStatus.Reason]
        REASON_MASTER_DISCONNECTED: _ClassVar[TaskStatus.Reason]
        REASON_RECONCILIATION: _ClassVar[TaskStatus.Reason]
        REASON_RESOURCES_UNKNOWN: _ClassVar[TaskStatus.Reason]
        REASON_AGENT_DISCONNECTED: _ClassVar[TaskStatus.Reason]
        REASON_AGENT_DRAINING: _ClassVar[TaskStatus.Reason]
        REASON_AGENT_REMOVED: _ClassVar[TaskStatus.Reason]
        REASON_AGENT_REMOVED_BY_OPERATOR: _ClassVar[TaskStatus.Reason]
        REASON_AGENT_REREGISTERED: _ClassVar[TaskStatus.Reason]
        REASON_AGENT_RESTARTED: _ClassVar[TaskStatus.Reason]
        REASON_AGENT_UNKNOWN: _ClassVar[TaskStatus.Reason]
        REASON_TASK_KILLED_DURING_LAUNCH: _ClassVar[TaskStatus.Reason]
        REASON_TASK_CHECK_STATUS_UPDATED: _ClassVar[TaskStatus.Reason]
        REASON_TASK_HEALTH_CHECK_STATUS_UPDATED: _ClassVar[TaskStatus.Reason]
        REASON_TASK_GROUP_INVALID: _ClassVar[TaskStatus.Reason]
        REASON_TASK_GROUP_UNAUTHORIZED: _ClassVar[TaskStatus.Reason]
        REASON_TASK_INVALID: _ClassVar[TaskStatus.Reason]
        REASON_TASK_UNAUTHORIZED: _ClassVar[TaskStatus.Reason]
        REASON_TASK_UNKNOWN: _ClassVar[TaskStatus.Reason]
    REASON_COMMAND_EXECUTOR_FAILED: TaskStatus.Reason
    REASON_CONTAINER_LAUNCH_FAILED: TaskStatus.Reason
    REASON_CONTAINER_LIMITATION: TaskStatus.Reason
    REASON_CONTAINER_LIMITATION_DISK: TaskStatus.Reason
    REASON_CONTAINER_LIMITATION_MEMORY: TaskStatus.Reason
    REASON_CONTAINER_PREEMPTED: TaskStatus.Reason
    REASON_CONTAINER_UPDATE_FAILED: TaskStatus.Reason
    REASON_MAX_COMPLETION_TIME_REACHED: TaskStatus.Reason
    REASON_EXECUTOR_REGISTRATION_TIMEOUT: TaskStatus.Reason
    REASON_EXECUTOR_REREGISTRATION_TIMEOUT: TaskStatus.Reason
    REASON_EXECUTOR_TERMINATED: TaskStatus.Reason
    REASON_EXECUTOR_UNREGISTERED: TaskStatus.Reason
    REASON_FRAMEWORK_REMOVED: TaskStatus.Reason
    REASON_GC_ERROR: TaskStatus.Reason
    REASON_INVALID_FRAMEWORKID: TaskStatus.Reason
    REASON_INVALID_OFFERS: TaskStatus.Reason
    REASON_IO_SWITCHBOARD_EXITED: TaskStatus.Reason
    REASON_MASTER_DISCONNECTED: TaskStatus.Reason
    REASON_RECONCILIATION: TaskStatus.Reason
    REASON_RESOURCES_UNKNOWN: TaskStatus.Reason
    REASON_AGENT_DISCONNECTED: TaskStatus.Reason
    REASON_AGENT_DRAINING: TaskStatus.Reason
    REASON_AGENT_REMOVED: TaskStatus.Reason
    REASON_AGENT_REMOVED_BY_OPERATOR: TaskStatus.Reason
    REASON_AGENT_REREGISTERED: TaskStatus.Reason
    REASON_AGENT_RESTARTED: TaskStatus.Reason
    REASON_AGENT_UNKNOWN: TaskStatus.Reason
    REASON_TASK_KILLED_DURING_LAUNCH: TaskStatus.Reason
    REASON_TASK_CHECK_STATUS_UPDATED: TaskStatus.Reason
    REASON_TASK_HEALTH_CHECK_STATUS_UPDATED: TaskStatus.Reason
    REASON_TASK_GROUP_INVALID: TaskStatus.Reason
    REASON_TASK_GROUP_UNAUTHORIZED: TaskStatus.Reason
    REASON_TASK_INVALID: TaskStatus.Reason
    REASON_TASK_UNAUTHORIZED: TaskStatus.Reason
    REASON_TASK_UNKNOWN: TaskStatus.Reason
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    task_id: TaskID
    state: TaskState
    message: str
    source: TaskStatus.Source
    reason: TaskStatus.Reason
    data: bytes
    agent_id: AgentID
    executor_id: ExecutorID
    timestamp: float
    uuid: bytes
    healthy: bool
    def __init__(self, task_id: _Optional[_Union[TaskID, _Mapping]] = ..., state: _Optional[_Union[TaskState, str]] = ..., message: _Optional[str] = ..., source: _Optional[_Union[TaskStatus.Source, str]] = ..., reason: _Optional[_Union[TaskStatus.Reason, str]] = ..., data: _Optional[bytes] = ..., agent_id: _Optional[_Union[AgentID, _Mapping]] = ..., executor_id: _Optional[_Union[ExecutorID, _Mapping]] = ..., timestamp: _Optional[float] = ..., uuid: _Optional[bytes] = ..., healthy: _Optional[bool] = ...) -> None: ...

class Offer(_message.Message):
    __slots__ = ("id", "framework_id", "agent_id", "hostname", "resources", "attributes", "executor_ids", "allocation_info")
    class Operation(_message.Message):
        __slots__ = ("type", "launch", "launch_group")
        class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            UNKNOWN: _ClassVar[Offer.Operation.Type]
            LAUNCH: _ClassVar[Offer.Operation.Type]
            LAUNCH_GROUP: _ClassVar[Offer.Operation.Type]
            RESERVE: _ClassVar[Offer.Operation.Type]
            UNRESERVE: _ClassVar[Offer.Operation.Type]
            CREATE: _ClassVar[Offer.Operation.Type]
            DESTROY: _ClassVar[Offer.Operation.Type]
            GROW_VOLUME: _ClassVar[Offer.Operation.Type]
            SHRINK_VOLUME: _ClassVar[Offer.Operation.Type]
            CREATE_DISK: _ClassVar[Offer.Operation.Type]
            DESTROY_DISK: _ClassVar[Offer.Operation.Type]
        UNKNOWN: Offer.Operation.Type
        LAUNCH: Offer.Operation.Type
        LAUNCH_GROUP: Offer.Operation.Type
        RESERVE: Offer.Operation.Type
        UNRESERVE: Offer.Operation.Type
        CREATE: Offer.Operation.Type
        DESTROY: Offer.Operation.Type
        GROW_VOLUME: Offer.Operation.Type
        SHRINK_VOLUME: Offer.Operation.Type
        CREATE_DISK: Offer.Operation.Type
        DESTROY_DISK: Offer.Operation.Type
        class Launch(_message.Message):
            __slots__ = ("task_infos",)
            TASK_INFOS_FIELD_NUMBER: _ClassVar[int]
            task_infos: _containers.RepeatedCompositeFieldContainer[TaskInfo]
            def __init__(self, task_infos: _Optional[_Iterable[_Union[TaskInfo, _Mapping]]] = ...) -> None: ...
        class LaunchGroup(_message.Message):
            __slots__ = ("executor", "task_group")
            EXECUTOR_FIELD_NUMBER: _ClassVar[int]
            TASK_GROUP_FIELD_NUMBER: _ClassVar[int]
            executor: ExecutorInfo
            task_group: TaskGroupInfo
            def __init__(self, executor: _Optional[_Union[ExecutorInfo, _Mapping]] = ..., task_group: _Optional[_Union[TaskGroupInfo, _Mapping]] = ...) -> None: ...
        TYPE_FIELD_NUMBER: _ClassVar[int]
        LAUNCH_FIELD_NUMBER: _ClassVar[int]
        LAUNCH_GROUP_FIELD_NUMBER: _ClassVar[int]
        type: Offer.Operation.Type
        launch: Offer.Operation.Launch
        launch_group: Offer.Operation.LaunchGroup
        def __init__(self, type: _Optional[_Union[Offer.Operation.Type, str]] = ..., launch: _Optional[_Union[Offer.Operation.Launch, _Mapping]] = ..., launch_group: _Optional[_Union[Offer.Operation.LaunchGroup, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_IDS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_INFO_FIELD_NUMBER: _ClassVar[int]
    id: OfferID
    framework_id: FrameworkID
    agent_id: AgentID
    hostname: str
    resources: _containers.RepeatedCompositeFieldContainer[Resource]
    attributes: _containers.RepeatedCompositeFieldContainer[Attribute]
    executor_ids: _containers.RepeatedCompositeFieldContainer[ExecutorID]
    allocation_info: Resource.AllocationInfo
    def __init__(self, id: _Optional[_Union[OfferID, _Mapping]] = ..., framework_id: _Optional[_Union[FrameworkID, _Mapping]] = ..., agent_id: _Optional[_Union[AgentID, _Mapping]] = ..., hostname: _Optional[str] = ..., resources: _Optional[_Iterable[_Union[Resource, _Mapping]]] = ..., attributes: _Optional[_Iterable[_Union[Attribute, _Mapping]]] = ..., executor_ids: _Optional[_Iterable[_Union[ExecutorID, _Mapping]]] = ..., allocation_info: _Optional[_Union[Resource.AllocationInfo, _Mapping]] = ...) -> None: ...

class Call(_message.Message):
    __slots__ = ("framework_id", "type", "subscribe", "accept", "decline", "revive", "kill", "acknowledge", "reconcile", "message", "suppress")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[Call.Type]
        SUBSCRIBE: _ClassVar[Call.Type]
        TEARDOWN: _ClassVar[Call.Type]
        ACCEPT: _ClassVar[Call.Type]
        DECLINE: _ClassVar[Call.Type]
        ACCEPT_INVERSE_OFFERS: _ClassVar[Call.Type]
        DECLINE_INVERSE_OFFERS: _ClassVar[Call.Type]
        REVIVE: _ClassVar[Call.Type]
        KILL: _ClassVar[Call.Type]
        SHUTDOWN: _ClassVar[Call.Type]
        ACKNOWLEDGE: _ClassVar[Call.Type]
        ACKNOWLEDGE_OPERATION_STATUS: _ClassVar[Call.Type]
        RECONCILE: _ClassVar[Call.Type]
        RECONCILE_OPERATIONS: _ClassVar[Call.Type]
        MESSAGE: _ClassVar[Call.Type]
        REQUEST: _ClassVar[Call.Type]
        SUPPRESS: _ClassVar[Call.Type]
        UPDATE_FRAMEWORK: _ClassVar[Call.Type]
    UNKNOWN: Call.Type
    SUBSCRIBE: Call.Type
    TEARDOWN: Call.Type
    ACCEPT: Call.Type
    DECLINE: Call.Type
    ACCEPT_INVERSE_OFFERS: Call.Type
    DECLINE_INVERSE_OFFERS: Call.Type
    REVIVE: Call.Type
    KILL: Call.Type
    SHUTDOWN: Call.Type
    ACKNOWLEDGE: Call.Type
    ACKNOWLEDGE_OPERATION_STATUS: Call.Type
    RECONCILE: Call.Type
    RECONCILE_OPERATIONS: Call.Type
    MESSAGE: Call.Type
    REQUEST: Call.Type
    SUPPRESS: Call.Type
    UPDATE_FRAMEWORK: Call.Type
    class Subscribe(_message.Message):
        __slots__ = ("framework_info",)
        FRAMEWORK_INFO_FIELD_NUMBER: _ClassVar[int]
        framework_info: FrameworkInfo
        def __init__(self, framework_info: _Optional[_Union[FrameworkInfo, _Mapping]] = ...) -> None: ...
    class Accept(_message.Message):
        __slots__ = ("offer_ids", "operations", "filters")
        OFFER_IDS_FIELD_NUMBER: _ClassVar[int]
        OPERATIONS_FIELD_NUMBER: _ClassVar[int]
        FILTERS_FIELD_NUMBER: _ClassVar[int]
        offer_ids: _containers.RepeatedCompositeFieldContainer[OfferID]
        operations: _containers.RepeatedCompositeFieldContainer[Offer.Operation]
        filters: Filters
        def __init__(self, offer_ids: _Optional[_Iterable[_Union[OfferID, _Mapping]]] = ..., operations: _Optional[_Iterable[_Union[Offer.Operation, _Mapping]]] = ..., filters: _Optional[_Union[Filters, _Mapping]] = ...) -> None: ...
    class Decline(_message.Message):
        __slots__ = ("offer_ids", "filters")
        OFFER_IDS_FIELD_NUMBER: _ClassVar[int]
        FILTERS_FIELD_NUMBER: _ClassVar[int]
        offer_ids: _containers.RepeatedCompositeFieldContainer[OfferID]
        filters: Filters
        def __init__(self, offer_ids: _Optional[_Iterable[_Union[OfferID, _Mapping]]] = ..., filters: _Optional[_Union[Filters, _Mapping]] = ...) -> None: ...
    class Revive(_message.Message):
        __slots__ = ("roles",)
        ROLES_FIELD_NUMBER: _ClassVar[int]
        roles: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, roles: _Optional[_Iterable[str]] = ...) -> None: ...
    class Suppress(_message.Message):
        __slots__ = ("roles",)
        ROLES_FIELD_NUMBER: _ClassVar[int]
        roles: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, roles: _Optional[_Iterable[str]] = ...) -> None: ...
    class Kill(_message.Message):
        __slots__ = ("task_id", "agent_id", "kill_policy")
        TASK_ID_FIELD_NUMBER: _ClassVar[int]
        AGENT_ID_FIELD_NUMBER: _ClassVar[int]
        KILL_POLICY_FIELD_NUMBER: _ClassVar[int]
        task_id: TaskID
        agent_id: AgentID
        kill_policy: KillPolicy
        def __init__(self, task_id: _Optional[_Union[TaskID, _Mapping]] = ..., agent_id: _Optional[_Union[AgentID, _Mapping]] = ..., kill_policy: _Optional[_Union[KillPolicy, _Mapping]] = ...) -> None: ...
    class Acknowledge(_message.Message):
        __slots__ = ("agent_id", "task_id", "uuid")
        AGENT_ID_FIELD_NUMBER: _ClassVar[int]
        TASK_ID_FIELD_NUMBER: _ClassVar[int]
        UUID_FIELD_NUMBER: _ClassVar[int]
        agent_id: AgentID
        task_id: TaskID
        uuid: bytes
        def __init__(self, agent_id: _Optional[_Union[AgentID, _Mapping]] = ..., task_id: _Optional[_Union[TaskID, _Mapping]] = ..., uuid: _Optional[bytes] = ...) -> None: ...
    class Reconcile(_message.Message):
        __slots__ = ("tasks",)
        class Task(_message.Message):
            __slots__ = ("task_id", "agent_id")
            TASK_ID_FIELD_NUMBER: _ClassVar[int]
            AGENT_ID_FIELD_NUMBER: _ClassVar[int]
            task_id: TaskID
            agent_id: AgentID
            def __init__(self, task_id: _Optional[_Union[TaskID, _Mapping]] = ..., agent_id: _Optional[_Union[AgentID, _Mapping]] = ...) -> None: ...
        TASKS_FIELD_NUMBER: _ClassVar[int]
        tasks: _containers.RepeatedCompositeFieldContainer[Call.Reconcile.Task]
        def __init__(self, tasks: _Optional[_Iterable[_Union[Call.Reconcile.Task, _Mapping]]] = ...) -> None: ...
    class Message(_message.Message):
        __slots__ = ("agent_id", "executor_id", "data")
        AGENT_ID_FIELD_NUMBER: _ClassVar[int]
        EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
        DATA_FIELD_NUMBER: _ClassVar[int]
        agent_id: AgentID
        executor_id: ExecutorID
        data: bytes
        def __init__(self, agent_id: _Optional[_Union[AgentID, _Mapping]] = ..., executor_id: _Optional[_Union[ExecutorID, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBE_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_FIELD_NUMBER: _ClassVar[int]
    DECLINE_FIELD_NUMBER: _ClassVar[int]
    REVIVE_FIELD_NUMBER: _ClassVar[int]
    KILL_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGE_FIELD_NUMBER: _ClassVar[int]
    RECONCILE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SUPPRESS_FIELD_NUMBER: _ClassVar[int]
    framework_id: FrameworkID
    type: Call.Type
    subscribe: Call.Subscribe
    accept: Call.Accept
    decline: Call.Decline
    revive: Call.Revive
    kill: Call.Kill
    acknowledge: Call.Acknowledge
    reconcile: Call.Reconcile
    message: Call.Message
    suppress: Call.Suppress
    def __init__(self, framework_id: _Optional[_Union[FrameworkID, _Mapping]] = ..., type: _Optional[_Union[Call.Type, str]] = ..., subscribe: _Optional[_Union[Call.Subscribe, _Mapping]] = ..., accept: _Optional[_Union[Call.Accept, _Mapping]] = ..., decline: _Optional[_Union[Call.Decline, _Mapping]] = ..., revive: _Optional[_Union[Call.Revive, _Mapping]] = ..., kill: _Optional[_Union[Call.Kill, _Mapping]] = ..., acknowledge: _Optional[_Union[Call.Acknowledge, _Mapping]] = ..., reconcile: _Optional[_Union[Call.Reconcile, _Mapping]] = ..., message: _Optional[_Union[Call.Message, _Mapping]] = ..., suppress: _Optional[_Union[Call.Suppress, _Mapping]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("type", "subscribed", "offers", "rescind", "update", "message", "failure", "error")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[Event.Type]
        SUBSCRIBED: _ClassVar[Event.Type]
        OFFERS: _ClassVar[Event.Type]
        INVERSE_OFFERS: _ClassVar[Event.Type]
        RESCIND: _ClassVar[Event.Type]
        RESCIND_INVERSE_OFFER: _ClassVar[Event.Type]
        UPDATE: _ClassVar[Event.Type]
        UPDATE_OPERATION_STATUS: _ClassVar[Event.Type]
        MESSAGE: _ClassVar[Event.Type]
        FAILURE: _ClassVar[Event.Type]
        ERROR: _ClassVar[Event.Type]
        HEARTBEAT: _ClassVar[Event.Type]
    UNKNOWN: Event.Type
    SUBSCRIBED: Event.Type
    OFFERS: Event.Type
    INVERSE_OFFERS: Event.Type
    RESCIND: Event.Type
    RESCIND_INVERSE_OFFER: Event.Type
    UPDATE: Event.Type
    UPDATE_OPERATION_STATUS: Event.Type
    MESSAGE: Event.Type
    FAILURE: Event.Type
    ERROR: Event.Type
    HEARTBEAT: Event.Type
    class Subscribed(_message.Message):
        __slots__ = ("framework_id", "heartbeat_interval_seconds", "master_info")
        FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
        HEARTBEAT_INTERVAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
        MASTER_INFO_FIELD_NUMBER: _ClassVar[int]
        framework_id: FrameworkID
        heartbeat_interval_seconds: float
        master_info: MasterInfo
        def __init__(self, framework_id: _Optional[_Union[FrameworkID, _Mapping]] = ..., heartbeat_interval_seconds: _Optional[float] = ..., master_info: _Optional[_Union[MasterInfo, _Mapping]] = ...) -> None: ...
    class Offers(_message.Message):
        __slots__ = ("offers",)
        OFFERS_FIELD_NUMBER: _ClassVar[int]
        offers: _containers.RepeatedCompositeFieldContainer[Offer]
        def __init__(self, offers: _Optional[_Iterable[_Union[Offer, _Mapping]]] = ...) -> None: ...
    class Rescind(_message.Message):
        __slots__ = ("offer_id",)
        OFFER_ID_FIELD_NUMBER: _ClassVar[int]
        offer_id: OfferID
        def __init__(self, offer_id: _Optional[_Union[OfferID, _Mapping]] = ...) -> None: ...
    class Update(_message.Message):
        __slots__ = ("status",)
        STATUS_FIELD_NUMBER: _ClassVar[int]
        status: TaskStatus
        def __init__(self, status: _Optional[_Union[TaskStatus, _Mapping]] = ...) -> None: ...
    class Error(_message.Message):
        __slots__ = ("message",)
        MESSAGE_FIELD_NUMBER: _ClassVar[int]
        message: str
        def __init__(self, message: _Optional[str] = ...) -> None: ...
    class Message(_message.Message):
        __slots__ = ("agent_id", "executor_id", "data")
        AGENT_ID_FIELD_NUMBER: _ClassVar[int]
        EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
        DATA_FIELD_NUMBER: _ClassVar[int]
        agent_id: AgentID
        executor_id: ExecutorID
        data: bytes
        def __init__(self, agent_id: _Optional[_Union[AgentID, _Mapping]] = ..., executor_id: _Optional[_Union[ExecutorID, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...
    class Failure(_message.Message):
        __slots__ = ("agent_id", "executor_id", "status")
        AGENT_ID_FIELD_NUMBER: _ClassVar[int]
        EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
        STATUS_FIELD_NUMBER: _ClassVar[int]
        agent_id: AgentID
        executor_id: ExecutorID
        status: int
        def __init__(self, agent_id: _Optional[_Union[AgentID, _Mapping]] = ..., executor_id: _Optional[_Union[ExecutorID, _Mapping]] = ..., status: _Optional[int] = ...) -> None: ...
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBED_FIELD_NUMBER: _ClassVar[int]
    OFFERS_FIELD_NUMBER: _ClassVar[int]
    RESCIND_FIELD_NUMBER: _ClassVar[int]
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    type: Event.Type
    subscribed: Event.Subscribed
    offers: Event.Offers
    rescind: Event.Rescind
    update: Event.Update
    message: Event.Message
    failure: Event.Failure
    error: Event.Error
    def __init__(self, type: _Optional[_Union[Event.Type, str]] = ..., subscribed: _Optional[_Union[Event.Subscribed, _Mapping]] = ..., offers: _Optional[_Union[Event.Offers, _Mapping]] = ..., rescind: _Optional[_Union[Event.Rescind, _Mapping]] = ..., update: _Optional[_Union[Event.Update, _Mapping]] = ..., message: _Optional[_Union[Event.Message, _Mapping]] = ..., failure: _Optional[_Union[Event.Failure, _Mapping]] = ..., error: _Optional[_Union[Event.Error, _Mapping]] = ...) -> None: ...
