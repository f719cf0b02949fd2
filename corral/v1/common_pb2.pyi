from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TaintEffect(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TAINT_EFFECT_UNSPECIFIED: _ClassVar[TaintEffect]
    TAINT_EFFECT_NO_SCHEDULE: _ClassVar[TaintEffect]
    TAINT_EFFECT_PREFER_NO_SCHEDULE: _ClassVar[TaintEffect]
    TAINT_EFFECT_NO_EXECUTE: _ClassVar[TaintEffect]

class TolerationOperator(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOLERATION_OPERATOR_UNSPECIFIED: _ClassVar[TolerationOperator]
    TOLERATION_OPERATOR_EQUAL: _ClassVar[TolerationOperator]
    TOLERATION_OPERATOR_EXISTS: _ClassVar[TolerationOperator]

class ConstraintOperator(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONSTRAINT_OPERATOR_UNSPECIFIED: _ClassVar[ConstraintOperator]
    CONSTRAINT_OPERATOR_EQUALS: _ClassVar[ConstraintOperator]
    CONSTRAINT_OPERATOR_IN: _ClassVar[ConstraintOperator]
    CONSTRAINT_OPERATOR_EXISTS: _ClassVar[ConstraintOperator]

class FrameworkCapability(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FRAMEWORK_CAPABILITY_UNSPECIFIED: _ClassVar[FrameworkCapability]
    FRAMEWORK_CAPABILITY_PARTITION_AWARE: _ClassVar[FrameworkCapability]
    FRAMEWORK_CAPABILITY_GANG: _ClassVar[FrameworkCapability]
    FRAMEWORK_CAPABILITY_REVOCABLE_RESOURCES: _ClassVar[FrameworkCapability]
    FRAMEWORK_CAPABILITY_GPU_RESOURCES: _ClassVar[FrameworkCapability]

class ContainerType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTAINER_TYPE_UNSPECIFIED: _ClassVar[ContainerType]
    CONTAINER_TYPE_DOCKER: _ClassVar[ContainerType]

class ContainerNetwork(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTAINER_NETWORK_HOST: _ClassVar[ContainerNetwork]
    CONTAINER_NETWORK_BRIDGE: _ClassVar[ContainerNetwork]

class VolumeMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VOLUME_MODE_RO: _ClassVar[VolumeMode]
    VOLUME_MODE_RW: _ClassVar[VolumeMode]

class WhenUnsatisfiable(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WHEN_UNSATISFIABLE_DO_NOT_SCHEDULE: _ClassVar[WhenUnsatisfiable]
    WHEN_UNSATISFIABLE_SCHEDULE_ANYWAY: _ClassVar[WhenUnsatisfiable]

class TaskState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_STATE_UNSPECIFIED: _ClassVar[TaskState]
    TASK_STATE_STAGING: _ClassVar[TaskState]
    TASK_STATE_STARTING: _ClassVar[TaskState]
    TASK_STATE_RUNNING: _ClassVar[TaskState]
    TASK_STATE_KILLING: _ClassVar[TaskState]
    TASK_STATE_FINISHED: _ClassVar[TaskState]
    TASK_STATE_FAILED: _ClassVar[TaskState]
    TASK_STATE_KILLED: _ClassVar[TaskState]
    TASK_STATE_ERROR: _ClassVar[TaskState]
    TASK_STATE_LOST: _ClassVar[TaskState]
    TASK_STATE_DROPPED: _ClassVar[TaskState]
    TASK_STATE_UNREACHABLE: _ClassVar[TaskState]
    TASK_STATE_GONE: _ClassVar[TaskState]
    TASK_STATE_UNKNOWN: _ClassVar[TaskState]

class TaskReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_REASON_UNSPECIFIED: _ClassVar[TaskReason]
    TASK_REASON_COMMAND_EXITED: _ClassVar[TaskReason]
    TASK_REASON_COMMAND_LAUNCH_FAILED: _ClassVar[TaskReason]
    TASK_REASON_KILLED_BY_FRAMEWORK: _ClassVar[TaskReason]
    TASK_REASON_AGENT_UNREACHABLE: _ClassVar[TaskReason]
    TASK_REASON_AGENT_REMOVED: _ClassVar[TaskReason]
    TASK_REASON_AGENT_RESTARTED: _ClassVar[TaskReason]
    TASK_REASON_AGENT_SHUTDOWN: _ClassVar[TaskReason]
    TASK_REASON_RECONCILIATION: _ClassVar[TaskReason]
    TASK_REASON_FRAMEWORK_REMOVED: _ClassVar[TaskReason]
    TASK_REASON_INVALID: _ClassVar[TaskReason]
    TASK_REASON_PREEMPTED: _ClassVar[TaskReason]
    TASK_REASON_EVICTED: _ClassVar[TaskReason]
    TASK_REASON_KILLED_DURING_LAUNCH: _ClassVar[TaskReason]
    TASK_REASON_KILLED_BY_OPERATOR: _ClassVar[TaskReason]
    TASK_REASON_AGENT_DRAINING: _ClassVar[TaskReason]
    TASK_REASON_MEMORY_LIMIT: _ClassVar[TaskReason]
    TASK_REASON_REVOCABLE_RESOURCES_RECLAIMED: _ClassVar[TaskReason]
    TASK_REASON_EXECUTOR_TERMINATED: _ClassVar[TaskReason]

class TaskSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_SOURCE_UNSPECIFIED: _ClassVar[TaskSource]
    TASK_SOURCE_MASTER: _ClassVar[TaskSource]
    TASK_SOURCE_AGENT: _ClassVar[TaskSource]
    TASK_SOURCE_EXECUTOR: _ClassVar[TaskSource]
TAINT_EFFECT_UNSPECIFIED: TaintEffect
TAINT_EFFECT_NO_SCHEDULE: TaintEffect
TAINT_EFFECT_PREFER_NO_SCHEDULE: TaintEffect
TAINT_EFFECT_NO_EXECUTE: TaintEffect
TOLERATION_OPERATOR_UNSPECIFIED: TolerationOperator
TOLERATION_OPERATOR_EQUAL: TolerationOperator
TOLERATION_OPERATOR_EXISTS: TolerationOperator
CONSTRAINT_OPERATOR_UNSPECIFIED: ConstraintOperator
CONSTRAINT_OPERATOR_EQUALS: ConstraintOperator
CONSTRAINT_OPERATOR_IN: ConstraintOperator
CONSTRAINT_OPERATOR_EXISTS: ConstraintOperator
FRAMEWORK_CAPABILITY_UNSPECIFIED: FrameworkCapability
FRAMEWORK_CAPABILITY_PARTITION_AWARE: FrameworkCapability
FRAMEWORK_CAPABILITY_GANG: FrameworkCapability
FRAMEWORK_CAPABILITY_REVOCABLE_RESOURCES: FrameworkCapability
FRAMEWORK_CAPABILITY_GPU_RESOURCES: FrameworkCapability
CONTAINER_TYPE_UNSPECIFIED: ContainerType
CONTAINER_TYPE_DOCKER: ContainerType
CONTAINER_NETWORK_HOST: ContainerNetwork
CONTAINER_NETWORK_BRIDGE: ContainerNetwork
VOLUME_MODE_RO: VolumeMode
VOLUME_MODE_RW: VolumeMode
WHEN_UNSATISFIABLE_DO_NOT_SCHEDULE: WhenUnsatisfiable
WHEN_UNSATISFIABLE_SCHEDULE_ANYWAY: WhenUnsatisfiable
TASK_STATE_UNSPECIFIED: TaskState
TASK_STATE_STAGING: TaskState
TASK_STATE_STARTING: TaskState
TASK_STATE_RUNNING: TaskState
TASK_STATE_KILLING: TaskState
TASK_STATE_FINISHED: TaskState
TASK_STATE_FAILED: TaskState
TASK_STATE_KILLED: TaskState
TASK_STATE_ERROR: TaskState
TASK_STATE_LOST: TaskState
TASK_STATE_DROPPED: TaskState
TASK_STATE_UNREACHABLE: TaskState
TASK_STATE_GONE: TaskState
TASK_STATE_UNKNOWN: TaskState
TASK_REASON_UNSPECIFIED: TaskReason
TASK_REASON_COMMAND_EXITED: TaskReason
TASK_REASON_COMMAND_LAUNCH_FAILED: TaskReason
TASK_REASON_KILLED_BY_FRAMEWORK: TaskReason
TASK_REASON_AGENT_UNREACHABLE: TaskReason
TASK_REASON_AGENT_REMOVED: TaskReason
TASK_REASON_AGENT_RESTARTED: TaskReason
TASK_REASON_AGENT_SHUTDOWN: TaskReason
TASK_REASON_RECONCILIATION: TaskReason
TASK_REASON_FRAMEWORK_REMOVED: TaskReason
TASK_REASON_INVALID: TaskReason
TASK_REASON_PREEMPTED: TaskReason
TASK_REASON_EVICTED: TaskReason
TASK_REASON_KILLED_DURING_LAUNCH: TaskReason
TASK_REASON_KILLED_BY_OPERATOR: TaskReason
TASK_REASON_AGENT_DRAINING: TaskReason
TASK_REASON_MEMORY_LIMIT: TaskReason
TASK_REASON_REVOCABLE_RESOURCES_RECLAIMED: TaskReason
TASK_REASON_EXECUTOR_TERMINATED: TaskReason
TASK_SOURCE_UNSPECIFIED: TaskSource
TASK_SOURCE_MASTER: TaskSource
TASK_SOURCE_AGENT: TaskSource
TASK_SOURCE_EXECUTOR: TaskSource

class Range(_message.Message):
    __slots__ = ("begin", "end")
    BEGIN_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    begin: int
    end: int
    def __init__(self, begin: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...

class Resources(_message.Message):
    __slots__ = ("cpus", "mem", "disk", "gpus", "ports")
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEM_FIELD_NUMBER: _ClassVar[int]
    DISK_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    cpus: float
    mem: float
    disk: float
    gpus: float
    ports: _containers.RepeatedCompositeFieldContainer[Range]
    def __init__(self, cpus: _Optional[float] = ..., mem: _Optional[float] = ..., disk: _Optional[float] = ..., gpus: _Optional[float] = ..., ports: _Optional[_Iterable[_Union[Range, _Mapping]]] = ...) -> None: ...

class Taint(_message.Message):
    __slots__ = ("key", "value", "effect")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    effect: TaintEffect
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[_Union[TaintEffect, str]] = ...) -> None: ...

class Toleration(_message.Message):
    __slots__ = ("key", "operator", "value", "effect")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: TolerationOperator
    value: str
    effect: TaintEffect
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[_Union[TolerationOperator, str]] = ..., value: _Optional[str] = ..., effect: _Optional[_Union[TaintEffect, str]] = ...) -> None: ...

class AttributeConstraint(_message.Message):
    __slots__ = ("attribute", "operator", "values")
    ATTRIBUTE_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    attribute: str
    operator: ConstraintOperator
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, attribute: _Optional[str] = ..., operator: _Optional[_Union[ConstraintOperator, str]] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class AgentInfo(_message.Message):
    __slots__ = ("id", "hostname", "resources", "attributes", "taints", "reservations", "name", "principal")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class ReservationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Resources
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Resources, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    TAINTS_FIELD_NUMBER: _ClassVar[int]
    RESERVATIONS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    id: str
    hostname: str
    resources: Resources
    attributes: _containers.ScalarMap[str, str]
    taints: _containers.RepeatedCompositeFieldContainer[Taint]
    reservations: _containers.MessageMap[str, Resources]
    name: str
    principal: str
    def __init__(self, id: _Optional[str] = ..., hostname: _Optional[str] = ..., resources: _Optional[_Union[Resources, _Mapping]] = ..., attributes: _Optional[_Mapping[str, str]] = ..., taints: _Optional[_Iterable[_Union[Taint, _Mapping]]] = ..., reservations: _Optional[_Mapping[str, Resources]] = ..., name: _Optional[str] = ..., principal: _Optional[str] = ...) -> None: ...

class FrameworkInfo(_message.Message):
    __slots__ = ("id", "name", "role", "principal", "capabilities", "failover_timeout", "tolerations", "offer_constraints", "hostname", "user", "on_behalf_of")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    FAILOVER_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    OFFER_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    ON_BEHALF_OF_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    role: str
    principal: str
    capabilities: _containers.RepeatedScalarFieldContainer[FrameworkCapability]
    failover_timeout: float
    tolerations: _containers.RepeatedCompositeFieldContainer[Toleration]
    offer_constraints: _containers.RepeatedCompositeFieldContainer[AttributeConstraint]
    hostname: str
    user: str
    on_behalf_of: Principal
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., role: _Optional[str] = ..., principal: _Optional[str] = ..., capabilities: _Optional[_Iterable[_Union[FrameworkCapability, str]]] = ..., failover_timeout: _Optional[float] = ..., tolerations: _Optional[_Iterable[_Union[Toleration, _Mapping]]] = ..., offer_constraints: _Optional[_Iterable[_Union[AttributeConstraint, _Mapping]]] = ..., hostname: _Optional[str] = ..., user: _Optional[str] = ..., on_behalf_of: _Optional[_Union[Principal, _Mapping]] = ...) -> None: ...

class Principal(_message.Message):
    __slots__ = ("name", "roles")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    name: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ...) -> None: ...

class Offer(_message.Message):
    __slots__ = ("id", "framework_id", "agent_id", "hostname", "resources", "attributes", "taints", "gang_id", "revocable")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    TAINTS_FIELD_NUMBER: _ClassVar[int]
    GANG_ID_FIELD_NUMBER: _ClassVar[int]
    REVOCABLE_FIELD_NUMBER: _ClassVar[int]
    id: str
    framework_id: str
    agent_id: str
    hostname: str
    resources: Resources
    attributes: _containers.ScalarMap[str, str]
    taints: _containers.RepeatedCompositeFieldContainer[Taint]
    gang_id: str
    revocable: bool
    def __init__(self, id: _Optional[str] = ..., framework_id: _Optional[str] = ..., agent_id: _Optional[str] = ..., hostname: _Optional[str] = ..., resources: _Optional[_Union[Resources, _Mapping]] = ..., attributes: _Optional[_Mapping[str, str]] = ..., taints: _Optional[_Iterable[_Union[Taint, _Mapping]]] = ..., gang_id: _Optional[str] = ..., revocable: _Optional[bool] = ...) -> None: ...

class CommandInfo(_message.Message):
    __slots__ = ("value", "arguments", "shell", "environment", "secret_environment")
    class EnvironmentEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class SecretEnvironmentEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    VALUE_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    SHELL_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    SECRET_ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    value: str
    arguments: _containers.RepeatedScalarFieldContainer[str]
    shell: bool
    environment: _containers.ScalarMap[str, str]
    secret_environment: _containers.ScalarMap[str, str]
    def __init__(self, value: _Optional[str] = ..., arguments: _Optional[_Iterable[str]] = ..., shell: _Optional[bool] = ..., environment: _Optional[_Mapping[str, str]] = ..., secret_environment: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SimulationInfo(_message.Message):
    __slots__ = ("duration_seconds", "exit_code")
    DURATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    duration_seconds: float
    exit_code: int
    def __init__(self, duration_seconds: _Optional[float] = ..., exit_code: _Optional[int] = ...) -> None: ...

class TaskInfo(_message.Message):
    __slots__ = ("task_id", "name", "agent_id", "command", "resources", "labels", "priority_class", "kill_grace_period_seconds", "simulation", "framework_id", "demand", "limits", "revocable", "priority", "framework_principal", "framework_role", "framework_seal", "container", "executor", "data")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_FIELD_NUMBER: _ClassVar[int]
    KILL_GRACE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SIMULATION_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    DEMAND_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    REVOCABLE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ROLE_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_SEAL_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    name: str
    agent_id: str
    command: CommandInfo
    resources: Resources
    labels: _containers.ScalarMap[str, str]
    priority_class: str
    kill_grace_period_seconds: float
    simulation: SimulationInfo
    framework_id: str
    demand: str
    limits: Resources
    revocable: bool
    priority: int
    framework_principal: str
    framework_role: str
    framework_seal: bytes
    container: ContainerInfo
    executor: ExecutorInfo
    data: bytes
    def __init__(self, task_id: _Optional[str] = ..., name: _Optional[str] = ..., agent_id: _Optional[str] = ..., command: _Optional[_Union[CommandInfo, _Mapping]] = ..., resources: _Optional[_Union[Resources, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., priority_class: _Optional[str] = ..., kill_grace_period_seconds: _Optional[float] = ..., simulation: _Optional[_Union[SimulationInfo, _Mapping]] = ..., framework_id: _Optional[str] = ..., demand: _Optional[str] = ..., limits: _Optional[_Union[Resources, _Mapping]] = ..., revocable: _Optional[bool] = ..., priority: _Optional[int] = ..., framework_principal: _Optional[str] = ..., framework_role: _Optional[str] = ..., framework_seal: _Optional[bytes] = ..., container: _Optional[_Union[ContainerInfo, _Mapping]] = ..., executor: _Optional[_Union[ExecutorInfo, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...

class FrameworkMessage(_message.Message):
    __slots__ = ("framework_id", "agent_id", "executor_id", "data")
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    framework_id: str
    agent_id: str
    executor_id: str
    data: bytes
    def __init__(self, framework_id: _Optional[str] = ..., agent_id: _Optional[str] = ..., executor_id: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class ExecutorInfo(_message.Message):
    __slots__ = ("executor_id", "name", "data")
    EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    executor_id: str
    name: str
    data: bytes
    def __init__(self, executor_id: _Optional[str] = ..., name: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class ContainerInfo(_message.Message):
    __slots__ = ("type", "docker", "volumes")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DOCKER_FIELD_NUMBER: _ClassVar[int]
    VOLUMES_FIELD_NUMBER: _ClassVar[int]
    type: ContainerType
    docker: DockerInfo
    volumes: _containers.RepeatedCompositeFieldContainer[Volume]
    def __init__(self, type: _Optional[_Union[ContainerType, str]] = ..., docker: _Optional[_Union[DockerInfo, _Mapping]] = ..., volumes: _Optional[_Iterable[_Union[Volume, _Mapping]]] = ...) -> None: ...

class DockerInfo(_message.Message):
    __slots__ = ("image", "network", "port_mappings", "force_pull_image")
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    NETWORK_FIELD_NUMBER: _ClassVar[int]
    PORT_MAPPINGS_FIELD_NUMBER: _ClassVar[int]
    FORCE_PULL_IMAGE_FIELD_NUMBER: _ClassVar[int]
    image: str
    network: ContainerNetwork
    port_mappings: _containers.RepeatedCompositeFieldContainer[PortMapping]
    force_pull_image: bool
    def __init__(self, image: _Optional[str] = ..., network: _Optional[_Union[ContainerNetwork, str]] = ..., port_mappings: _Optional[_Iterable[_Union[PortMapping, _Mapping]]] = ..., force_pull_image: _Optional[bool] = ...) -> None: ...

class PortMapping(_message.Message):
    __slots__ = ("host_port", "container_port", "protocol")
    HOST_PORT_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    host_port: int
    container_port: int
    protocol: str
    def __init__(self, host_port: _Optional[int] = ..., container_port: _Optional[int] = ..., protocol: _Optional[str] = ...) -> None: ...

class Volume(_message.Message):
    __slots__ = ("host_path", "container_path", "mode")
    HOST_PATH_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_PATH_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    host_path: str
    container_path: str
    mode: VolumeMode
    def __init__(self, host_path: _Optional[str] = ..., container_path: _Optional[str] = ..., mode: _Optional[_Union[VolumeMode, str]] = ...) -> None: ...

class Demand(_message.Message):
    __slots__ = ("name", "resources", "count", "priority_class", "min_member", "constraints", "tolerations", "spread")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_FIELD_NUMBER: _ClassVar[int]
    MIN_MEMBER_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    SPREAD_FIELD_NUMBER: _ClassVar[int]
    name: str
    resources: Resources
    count: int
    priority_class: str
    min_member: int
    constraints: _containers.RepeatedCompositeFieldContainer[AttributeConstraint]
    tolerations: _containers.RepeatedCompositeFieldContainer[Toleration]
    spread: TopologySpread
    def __init__(self, name: _Optional[str] = ..., resources: _Optional[_Union[Resources, _Mapping]] = ..., count: _Optional[int] = ..., priority_class: _Optional[str] = ..., min_member: _Optional[int] = ..., constraints: _Optional[_Iterable[_Union[AttributeConstraint, _Mapping]]] = ..., tolerations: _Optional[_Iterable[_Union[Toleration, _Mapping]]] = ..., spread: _Optional[_Union[TopologySpread, _Mapping]] = ...) -> None: ...

class TopologySpread(_message.Message):
    __slots__ = ("topology_key", "max_skew", "when_unsatisfiable")
    TOPOLOGY_KEY_FIELD_NUMBER: _ClassVar[int]
    MAX_SKEW_FIELD_NUMBER: _ClassVar[int]
    WHEN_UNSATISFIABLE_FIELD_NUMBER: _ClassVar[int]
    topology_key: str
    max_skew: int
    when_unsatisfiable: WhenUnsatisfiable
    def __init__(self, topology_key: _Optional[str] = ..., max_skew: _Optional[int] = ..., when_unsatisfiable: _Optional[_Union[WhenUnsatisfiable, str]] = ...) -> None: ...

class PriorityClass(_message.Message):
    __slots__ = ("name", "value", "preemption_policy", "description", "global_default")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: int
    preemption_policy: str
    description: str
    global_default: bool
    def __init__(self, name: _Optional[str] = ..., value: _Optional[int] = ..., preemption_policy: _Optional[str] = ..., description: _Optional[str] = ..., global_default: _Optional[bool] = ...) -> None: ...

class TaskStatus(_message.Message):
    __slots__ = ("task_id", "state", "reason", "message", "source", "agent_id", "framework_id", "timestamp", "uuid", "exit_code", "healthy", "container_status")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_STATUS_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    state: TaskState
    reason: TaskReason
    message: str
    source: TaskSource
    agent_id: str
    framework_id: str
    timestamp: float
    uuid: bytes
    exit_code: int
    healthy: bool
    container_status: ContainerStatus
    def __init__(self, task_id: _Optional[str] = ..., state: _Optional[_Union[TaskState, str]] = ..., reason: _Optional[_Union[TaskReason, str]] = ..., message: _Optional[str] = ..., source: _Optional[_Union[TaskSource, str]] = ..., agent_id: _Optional[str] = ..., framework_id: _Optional[str] = ..., timestamp: _Optional[float] = ..., uuid: _Optional[bytes] = ..., exit_code: _Optional[int] = ..., healthy: _Optional[bool] = ..., container_status: _Optional[_Union[ContainerStatus, _Mapping]] = ...) -> None: ...

class ContainerStatus(_message.Message):
    __slots__ = ("container_id",)
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    container_id: str
    def __init__(self, container_id: _Optional[str] = ...) -> None: ...

class TaskUsage(_message.Message):
    __slots__ = ("task_id", "framework_id", "cpus", "mem")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEM_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    framework_id: str
    cpus: float
    mem: float
    def __init__(self, task_id: _Optional[str] = ..., framework_id: _Optional[str] = ..., cpus: _Optional[float] = ..., mem: _Optional[float] = ...) -> None: ...

class AgentUsage(_message.Message):
    __slots__ = ("timestamp", "mem_total", "mem_used", "mem_available", "cpus_used", "memory_pressure", "pressure_since", "pressure_message", "revocable", "source")
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    MEM_TOTAL_FIELD_NUMBER: _ClassVar[int]
    MEM_USED_FIELD_NUMBER: _ClassVar[int]
    MEM_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    CPUS_USED_FIELD_NUMBER: _ClassVar[int]
    MEMORY_PRESSURE_FIELD_NUMBER: _ClassVar[int]
    PRESSURE_SINCE_FIELD_NUMBER: _ClassVar[int]
    PRESSURE_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REVOCABLE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    timestamp: float
    mem_total: float
    mem_used: float
    mem_available: float
    cpus_used: float
    memory_pressure: str
    pressure_since: float
    pressure_message: str
    revocable: Resources
    source: str
    def __init__(self, timestamp: _Optional[float] = ..., mem_total: _Optional[float] = ..., mem_used: _Optional[float] = ..., mem_available: _Optional[float] = ..., cpus_used: _Optional[float] = ..., memory_pressure: _Optional[str] = ..., pressure_since: _Optional[float] = ..., pressure_message: _Optional[str] = ..., revocable: _Optional[_Union[Resources, _Mapping]] = ..., source: _Optional[str] = ...) -> None: ...

class ExecutorTerminated(_message.Message):
    __slots__ = ("framework_id", "agent_id", "executor_id", "status", "message")
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    framework_id: str
    agent_id: str
    executor_id: str
    status: int
    message: str
    def __init__(self, framework_id: _Optional[str] = ..., agent_id: _Optional[str] = ..., executor_id: _Optional[str] = ..., status: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...
