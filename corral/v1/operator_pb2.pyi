from corral.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PublishStatusRequest(_message.Message):
    __slots__ = ("service", "kind", "document_json", "ttl_seconds")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_JSON_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    service: str
    kind: str
    document_json: str
    ttl_seconds: float
    def __init__(self, service: _Optional[str] = ..., kind: _Optional[str] = ..., document_json: _Optional[str] = ..., ttl_seconds: _Optional[float] = ...) -> None: ...

class PublishStatusResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetServiceStatusesRequest(_message.Message):
    __slots__ = ("kind",)
    KIND_FIELD_NUMBER: _ClassVar[int]
    kind: str
    def __init__(self, kind: _Optional[str] = ...) -> None: ...

class ServiceStatus(_message.Message):
    __slots__ = ("service", "kind", "principal", "published_at", "ttl_seconds", "stale", "document_json", "age_seconds")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_AT_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_JSON_FIELD_NUMBER: _ClassVar[int]
    AGE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    service: str
    kind: str
    principal: str
    published_at: float
    ttl_seconds: float
    stale: bool
    document_json: str
    age_seconds: float
    def __init__(self, service: _Optional[str] = ..., kind: _Optional[str] = ..., principal: _Optional[str] = ..., published_at: _Optional[float] = ..., ttl_seconds: _Optional[float] = ..., stale: _Optional[bool] = ..., document_json: _Optional[str] = ..., age_seconds: _Optional[float] = ...) -> None: ...

class ServiceStatuses(_message.Message):
    __slots__ = ("statuses",)
    STATUSES_FIELD_NUMBER: _ClassVar[int]
    statuses: _containers.RepeatedCompositeFieldContainer[ServiceStatus]
    def __init__(self, statuses: _Optional[_Iterable[_Union[ServiceStatus, _Mapping]]] = ...) -> None: ...

class ReviewRequest(_message.Message):
    __slots__ = ("subject", "framework", "demands", "act_for", "framework_id", "quiet", "submit_to_queue")
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_FIELD_NUMBER: _ClassVar[int]
    DEMANDS_FIELD_NUMBER: _ClassVar[int]
    ACT_FOR_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    QUIET_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_TO_QUEUE_FIELD_NUMBER: _ClassVar[int]
    subject: _common_pb2.Principal
    framework: _common_pb2.FrameworkInfo
    demands: _containers.RepeatedCompositeFieldContainer[_common_pb2.Demand]
    act_for: str
    framework_id: str
    quiet: bool
    submit_to_queue: str
    def __init__(self, subject: _Optional[_Union[_common_pb2.Principal, _Mapping]] = ..., framework: _Optional[_Union[_common_pb2.FrameworkInfo, _Mapping]] = ..., demands: _Optional[_Iterable[_Union[_common_pb2.Demand, _Mapping]]] = ..., act_for: _Optional[str] = ..., framework_id: _Optional[str] = ..., quiet: _Optional[bool] = ..., submit_to_queue: _Optional[str] = ...) -> None: ...

class ReviewResponse(_message.Message):
    __slots__ = ("allowed", "action", "object", "rule", "message")
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    allowed: bool
    action: str
    object: str
    rule: str
    message: str
    def __init__(self, allowed: _Optional[bool] = ..., action: _Optional[str] = ..., object: _Optional[str] = ..., rule: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class KillTasksRequest(_message.Message):
    __slots__ = ("task_ids", "framework_id", "grace_seconds")
    TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    GRACE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    task_ids: _containers.RepeatedScalarFieldContainer[str]
    framework_id: str
    grace_seconds: float
    def __init__(self, task_ids: _Optional[_Iterable[str]] = ..., framework_id: _Optional[str] = ..., grace_seconds: _Optional[float] = ...) -> None: ...

class KilledTask(_message.Message):
    __slots__ = ("task_id", "framework_id", "agent_id", "outcome")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    framework_id: str
    agent_id: str
    outcome: str
    def __init__(self, task_id: _Optional[str] = ..., framework_id: _Optional[str] = ..., agent_id: _Optional[str] = ..., outcome: _Optional[str] = ...) -> None: ...

class KillTasksResponse(_message.Message):
    __slots__ = ("tasks",)
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[KilledTask]
    def __init__(self, tasks: _Optional[_Iterable[_Union[KilledTask, _Mapping]]] = ...) -> None: ...

class TeardownFrameworkRequest(_message.Message):
    __slots__ = ("framework_id",)
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    framework_id: str
    def __init__(self, framework_id: _Optional[str] = ...) -> None: ...

class TeardownFrameworkResponse(_message.Message):
    __slots__ = ("tasks_killed",)
    TASKS_KILLED_FIELD_NUMBER: _ClassVar[int]
    tasks_killed: int
    def __init__(self, tasks_killed: _Optional[int] = ...) -> None: ...

class CordonRequest(_message.Message):
    __slots__ = ("agent_id",)
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    def __init__(self, agent_id: _Optional[str] = ...) -> None: ...

class UncordonRequest(_message.Message):
    __slots__ = ("agent_id",)
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    def __init__(self, agent_id: _Optional[str] = ...) -> None: ...

class DrainRequest(_message.Message):
    __slots__ = ("agent_id", "grace_seconds")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    GRACE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    grace_seconds: float
    def __init__(self, agent_id: _Optional[str] = ..., grace_seconds: _Optional[float] = ...) -> None: ...

class MaintenanceResponse(_message.Message):
    __slots__ = ("agent_id", "maintenance", "tasks_killed")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    MAINTENANCE_FIELD_NUMBER: _ClassVar[int]
    TASKS_KILLED_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    maintenance: Maintenance
    tasks_killed: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, agent_id: _Optional[str] = ..., maintenance: _Optional[_Union[Maintenance, _Mapping]] = ..., tasks_killed: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteAgentRequest(_message.Message):
    __slots__ = ("agent_id",)
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    def __init__(self, agent_id: _Optional[str] = ...) -> None: ...

class DeleteAgentResponse(_message.Message):
    __slots__ = ("tasks_gone",)
    TASKS_GONE_FIELD_NUMBER: _ClassVar[int]
    tasks_gone: int
    def __init__(self, tasks_gone: _Optional[int] = ...) -> None: ...

class ReadTaskFileRequest(_message.Message):
    __slots__ = ("task_id", "framework_id", "path", "offset", "tail_lines", "follow")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TAIL_LINES_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    framework_id: str
    path: str
    offset: int
    tail_lines: int
    follow: bool
    def __init__(self, task_id: _Optional[str] = ..., framework_id: _Optional[str] = ..., path: _Optional[str] = ..., offset: _Optional[int] = ..., tail_lines: _Optional[int] = ..., follow: _Optional[bool] = ...) -> None: ...

class TaskFileChunk(_message.Message):
    __slots__ = ("data", "offset", "task_id", "framework_id", "agent_id")
    DATA_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    offset: int
    task_id: str
    framework_id: str
    agent_id: str
    def __init__(self, data: _Optional[bytes] = ..., offset: _Optional[int] = ..., task_id: _Optional[str] = ..., framework_id: _Optional[str] = ..., agent_id: _Optional[str] = ...) -> None: ...

class Maintenance(_message.Message):
    __slots__ = ("mode", "since", "requested_by", "grace_seconds", "drained")
    MODE_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_BY_FIELD_NUMBER: _ClassVar[int]
    GRACE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    DRAINED_FIELD_NUMBER: _ClassVar[int]
    mode: str
    since: float
    requested_by: str
    grace_seconds: float
    drained: bool
    def __init__(self, mode: _Optional[str] = ..., since: _Optional[float] = ..., requested_by: _Optional[str] = ..., grace_seconds: _Optional[float] = ..., drained: _Optional[bool] = ...) -> None: ...

class IssueTokenRequest(_message.Message):
    __slots__ = ("ttl_seconds",)
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ttl_seconds: float
    def __init__(self, ttl_seconds: _Optional[float] = ...) -> None: ...

class Token(_message.Message):
    __slots__ = ("token", "principal", "expires_at")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    token: str
    principal: str
    expires_at: float
    def __init__(self, token: _Optional[str] = ..., principal: _Optional[str] = ..., expires_at: _Optional[float] = ...) -> None: ...

class AclState(_message.Message):
    __slots__ = ("source", "version", "digest", "rules")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    source: str
    version: str
    digest: str
    rules: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, source: _Optional[str] = ..., version: _Optional[str] = ..., digest: _Optional[str] = ..., rules: _Optional[_Iterable[str]] = ...) -> None: ...

class SetPriorityClassRequest(_message.Message):
    __slots__ = ("priority_class",)
    PRIORITY_CLASS_FIELD_NUMBER: _ClassVar[int]
    priority_class: _common_pb2.PriorityClass
    def __init__(self, priority_class: _Optional[_Union[_common_pb2.PriorityClass, _Mapping]] = ...) -> None: ...

class SetPriorityClassResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeletePriorityClassRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeletePriorityClassResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetPriorityClassesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PriorityClasses(_message.Message):
    __slots__ = ("priority_classes",)
    PRIORITY_CLASSES_FIELD_NUMBER: _ClassVar[int]
    priority_classes: _containers.RepeatedCompositeFieldContainer[_common_pb2.PriorityClass]
    def __init__(self, priority_classes: _Optional[_Iterable[_Union[_common_pb2.PriorityClass, _Mapping]]] = ...) -> None: ...

class SetWeightRequest(_message.Message):
    __slots__ = ("role", "weight")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    role: str
    weight: float
    def __init__(self, role: _Optional[str] = ..., weight: _Optional[float] = ...) -> None: ...

class SetWeightResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ResourceLimits(_message.Message):
    __slots__ = ("cpus", "mem", "disk", "gpus")
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEM_FIELD_NUMBER: _ClassVar[int]
    DISK_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    cpus: float
    mem: float
    disk: float
    gpus: float
    def __init__(self, cpus: _Optional[float] = ..., mem: _Optional[float] = ..., disk: _Optional[float] = ..., gpus: _Optional[float] = ...) -> None: ...

class Quota(_message.Message):
    __slots__ = ("guarantee", "limit")
    GUARANTEE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    guarantee: _common_pb2.Resources
    limit: ResourceLimits
    def __init__(self, guarantee: _Optional[_Union[_common_pb2.Resources, _Mapping]] = ..., limit: _Optional[_Union[ResourceLimits, _Mapping]] = ...) -> None: ...

class SetQuotaRequest(_message.Message):
    __slots__ = ("role", "quota")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    QUOTA_FIELD_NUMBER: _ClassVar[int]
    role: str
    quota: Quota
    def __init__(self, role: _Optional[str] = ..., quota: _Optional[_Union[Quota, _Mapping]] = ...) -> None: ...

class SetQuotaResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetRolesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RoleState(_message.Message):
    __slots__ = ("role", "weight", "quota", "allocated", "offered", "share", "framework_ids")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    QUOTA_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    OFFERED_FIELD_NUMBER: _ClassVar[int]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_IDS_FIELD_NUMBER: _ClassVar[int]
    role: str
    weight: float
    quota: Quota
    allocated: _common_pb2.Resources
    offered: _common_pb2.Resources
    share: float
    framework_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, role: _Optional[str] = ..., weight: _Optional[float] = ..., quota: _Optional[_Union[Quota, _Mapping]] = ..., allocated: _Optional[_Union[_common_pb2.Resources, _Mapping]] = ..., offered: _Optional[_Union[_common_pb2.Resources, _Mapping]] = ..., share: _Optional[float] = ..., framework_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class Roles(_message.Message):
    __slots__ = ("roles",)
    ROLES_FIELD_NUMBER: _ClassVar[int]
    roles: _containers.RepeatedCompositeFieldContainer[RoleState]
    def __init__(self, roles: _Optional[_Iterable[_Union[RoleState, _Mapping]]] = ...) -> None: ...

class ExplainRequest(_message.Message):
    __slots__ = ("framework_id",)
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    framework_id: str
    def __init__(self, framework_id: _Optional[str] = ...) -> None: ...

class Explanation(_message.Message):
    __slots__ = ("framework_id", "state", "suppressed", "outstanding_offers", "offered_agents", "reasons", "details_json", "priority", "wants_nothing", "pending_demands_json")
    class ReasonsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUPPRESSED_FIELD_NUMBER: _ClassVar[int]
    OUTSTANDING_OFFERS_FIELD_NUMBER: _ClassVar[int]
    OFFERED_AGENTS_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    DETAILS_JSON_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    WANTS_NOTHING_FIELD_NUMBER: _ClassVar[int]
    PENDING_DEMANDS_JSON_FIELD_NUMBER: _ClassVar[int]
    framework_id: str
    state: str
    suppressed: bool
    outstanding_offers: int
    offered_agents: int
    reasons: _containers.ScalarMap[str, int]
    details_json: str
    priority: int
    wants_nothing: bool
    pending_demands_json: str
    def __init__(self, framework_id: _Optional[str] = ..., state: _Optional[str] = ..., suppressed: _Optional[bool] = ..., outstanding_offers: _Optional[int] = ..., offered_agents: _Optional[int] = ..., reasons: _Optional[_Mapping[str, int]] = ..., details_json: _Optional[str] = ..., priority: _Optional[int] = ..., wants_nothing: _Optional[bool] = ..., pending_demands_json: _Optional[str] = ...) -> None: ...

class GetStateRequest(_message.Message):
    __slots__ = ("agent", "framework_id", "task", "role")
    AGENT_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    agent: str
    framework_id: str
    task: TaskRef
    role: str
    def __init__(self, agent: _Optional[str] = ..., framework_id: _Optional[str] = ..., task: _Optional[_Union[TaskRef, _Mapping]] = ..., role: _Optional[str] = ...) -> None: ...

class TaskRef(_message.Message):
    __slots__ = ("task_id", "framework_id")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    framework_id: str
    def __init__(self, task_id: _Optional[str] = ..., framework_id: _Optional[str] = ...) -> None: ...

class AgentState(_message.Message):
    __slots__ = ("info", "active", "used", "offered", "registered_at", "state", "connected", "tasks", "last_seen", "heartbeat_interval", "maintenance", "usage", "revocable_used")
    INFO_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    OFFERED_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_AT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    MAINTENANCE_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    REVOCABLE_USED_FIELD_NUMBER: _ClassVar[int]
    info: _common_pb2.AgentInfo
    active: bool
    used: _common_pb2.Resources
    offered: _common_pb2.Resources
    registered_at: float
    state: str
    connected: bool
    tasks: int
    last_seen: float
    heartbeat_interval: float
    maintenance: Maintenance
    usage: _common_pb2.AgentUsage
    revocable_used: _common_pb2.Resources
    def __init__(self, info: _Optional[_Union[_common_pb2.AgentInfo, _Mapping]] = ..., active: _Optional[bool] = ..., used: _Optional[_Union[_common_pb2.Resources, _Mapping]] = ..., offered: _Optional[_Union[_common_pb2.Resources, _Mapping]] = ..., registered_at: _Optional[float] = ..., state: _Optional[str] = ..., connected: _Optional[bool] = ..., tasks: _Optional[int] = ..., last_seen: _Optional[float] = ..., heartbeat_interval: _Optional[float] = ..., maintenance: _Optional[_Union[Maintenance, _Mapping]] = ..., usage: _Optional[_Union[_common_pb2.AgentUsage, _Mapping]] = ..., revocable_used: _Optional[_Union[_common_pb2.Resources, _Mapping]] = ...) -> None: ...

class DemandState(_message.Message):
    __slots__ = ("demand", "tasks", "unmet")
    DEMAND_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    UNMET_FIELD_NUMBER: _ClassVar[int]
    demand: _common_pb2.Demand
    tasks: int
    unmet: int
    def __init__(self, demand: _Optional[_Union[_common_pb2.Demand, _Mapping]] = ..., tasks: _Optional[int] = ..., unmet: _Optional[int] = ...) -> None: ...

class FrameworkState(_message.Message):
    __slots__ = ("info", "connected", "suppressed", "used", "offered", "demands", "priority", "state", "tasks", "offers", "pending_updates", "registered_at", "wants_nothing")
    INFO_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_FIELD_NUMBER: _ClassVar[int]
    SUPPRESSED_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    OFFERED_FIELD_NUMBER: _ClassVar[int]
    DEMANDS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    OFFERS_FIELD_NUMBER: _ClassVar[int]
    PENDING_UPDATES_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_AT_FIELD_NUMBER: _ClassVar[int]
    WANTS_NOTHING_FIELD_NUMBER: _ClassVar[int]
    info: _common_pb2.FrameworkInfo
    connected: bool
    suppressed: bool
    used: _common_pb2.Resources
    offered: _common_pb2.Resources
    demands: _containers.RepeatedCompositeFieldContainer[DemandState]
    priority: int
    state: str
    tasks: int
    offers: int
    pending_updates: int
    registered_at: float
    wants_nothing: bool
    def __init__(self, info: _Optional[_Union[_common_pb2.FrameworkInfo, _Mapping]] = ..., connected: _Optional[bool] = ..., suppressed: _Optional[bool] = ..., used: _Optional[_Union[_common_pb2.Resources, _Mapping]] = ..., offered: _Optional[_Union[_common_pb2.Resources, _Mapping]] = ..., demands: _Optional[_Iterable[_Union[DemandState, _Mapping]]] = ..., priority: _Optional[int] = ..., state: _Optional[str] = ..., tasks: _Optional[int] = ..., offers: _Optional[int] = ..., pending_updates: _Optional[int] = ..., registered_at: _Optional[float] = ..., wants_nothing: _Optional[bool] = ...) -> None: ...

class TaskEntry(_message.Message):
    __slots__ = ("info", "status", "launched_at", "qos_class", "usage")
    INFO_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAUNCHED_AT_FIELD_NUMBER: _ClassVar[int]
    QOS_CLASS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    info: _common_pb2.TaskInfo
    status: _common_pb2.TaskStatus
    launched_at: float
    qos_class: str
    usage: _common_pb2.TaskUsage
    def __init__(self, info: _Optional[_Union[_common_pb2.TaskInfo, _Mapping]] = ..., status: _Optional[_Union[_common_pb2.TaskStatus, _Mapping]] = ..., launched_at: _Optional[float] = ..., qos_class: _Optional[str] = ..., usage: _Optional[_Union[_common_pb2.TaskUsage, _Mapping]] = ...) -> None: ...

class State(_message.Message):
    __slots__ = ("master_id", "agents", "frameworks", "tasks", "offers", "roles", "priority_classes", "acls")
    MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORKS_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    OFFERS_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASSES_FIELD_NUMBER: _ClassVar[int]
    ACLS_FIELD_NUMBER: _ClassVar[int]
    master_id: str
    agents: _containers.RepeatedCompositeFieldContainer[AgentState]
    frameworks: _containers.RepeatedCompositeFieldContainer[FrameworkState]
    tasks: _containers.RepeatedCompositeFieldContainer[TaskEntry]
    offers: _containers.RepeatedCompositeFieldContainer[_common_pb2.Offer]
    roles: _containers.RepeatedCompositeFieldContainer[RoleState]
    priority_classes: _containers.RepeatedCompositeFieldContainer[_common_pb2.PriorityClass]
    acls: AclState
    def __init__(self, master_id: _Optional[str] = ..., agents: _Optional[_Iterable[_Union[AgentState, _Mapping]]] = ..., frameworks: _Optional[_Iterable[_Union[FrameworkState, _Mapping]]] = ..., tasks: _Optional[_Iterable[_Union[TaskEntry, _Mapping]]] = ..., offers: _Optional[_Iterable[_Union[_common_pb2.Offer, _Mapping]]] = ..., roles: _Optional[_Iterable[_Union[RoleState, _Mapping]]] = ..., priority_classes: _Optional[_Iterable[_Union[_common_pb2.PriorityClass, _Mapping]]] = ..., acls: _Optional[_Union[AclState, _Mapping]] = ...) -> None: ...

class ListAgentsRequest(_message.Message):
    __slots__ = ("limit", "page_token")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    limit: int
    page_token: str
    def __init__(self, limit: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class AgentList(_message.Message):
    __slots__ = ("master_id", "agents", "next_page_token", "total")
    MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    master_id: str
    agents: _containers.RepeatedCompositeFieldContainer[AgentState]
    next_page_token: str
    total: int
    def __init__(self, master_id: _Optional[str] = ..., agents: _Optional[_Iterable[_Union[AgentState, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total: _Optional[int] = ...) -> None: ...

class ListFrameworksRequest(_message.Message):
    __slots__ = ("limit", "page_token", "live_only")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LIVE_ONLY_FIELD_NUMBER: _ClassVar[int]
    limit: int
    page_token: str
    live_only: bool
    def __init__(self, limit: _Optional[int] = ..., page_token: _Optional[str] = ..., live_only: _Optional[bool] = ...) -> None: ...

class FrameworkList(_message.Message):
    __slots__ = ("master_id", "frameworks", "next_page_token", "total", "priority_classes")
    MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORKS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASSES_FIELD_NUMBER: _ClassVar[int]
    master_id: str
    frameworks: _containers.RepeatedCompositeFieldContainer[FrameworkState]
    next_page_token: str
    total: int
    priority_classes: _containers.RepeatedCompositeFieldContainer[_common_pb2.PriorityClass]
    def __init__(self, master_id: _Optional[str] = ..., frameworks: _Optional[_Iterable[_Union[FrameworkState, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total: _Optional[int] = ..., priority_classes: _Optional[_Iterable[_Union[_common_pb2.PriorityClass, _Mapping]]] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ("limit", "page_token", "live_only")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LIVE_ONLY_FIELD_NUMBER: _ClassVar[int]
    limit: int
    page_token: str
    live_only: bool
    def __init__(self, limit: _Optional[int] = ..., page_token: _Optional[str] = ..., live_only: _Optional[bool] = ...) -> None: ...

class ListOffersRequest(_message.Message):
    __slots__ = ("limit", "page_token")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    limit: int
    page_token: str
    def __init__(self, limit: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class OfferList(_message.Message):
    __slots__ = ("master_id", "offers", "next_page_token", "total")
    MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    OFFERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    master_id: str
    offers: _containers.RepeatedCompositeFieldContainer[_common_pb2.Offer]
    next_page_token: str
    total: int
    def __init__(self, master_id: _Optional[str] = ..., offers: _Optional[_Iterable[_Union[_common_pb2.Offer, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total: _Optional[int] = ...) -> None: ...

class TaskList(_message.Message):
    __slots__ = ("master_id", "tasks", "next_page_token", "total", "agents")
    MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    master_id: str
    tasks: _containers.RepeatedCompositeFieldContainer[TaskEntry]
    next_page_token: str
    total: int
    agents: _containers.RepeatedCompositeFieldContainer[_common_pb2.AgentInfo]
    def __init__(self, master_id: _Optional[str] = ..., tasks: _Optional[_Iterable[_Union[TaskEntry, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total: _Optional[int] = ..., agents: _Optional[_Iterable[_Union[_common_pb2.AgentInfo, _Mapping]]] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class GetEventsRequest(_message.Message):
    __slots__ = ("reason", "subject")
    REASON_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    reason: str
    subject: str
    def __init__(self, reason: _Optional[str] = ..., subject: _Optional[str] = ...) -> None: ...

class ClusterEvents(_message.Message):
    __slots__ = ("events", "dropped")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[ClusterEvent]
    dropped: int
    def __init__(self, events: _Optional[_Iterable[_Union[ClusterEvent, _Mapping]]] = ..., dropped: _Optional[int] = ...) -> None: ...

class ClusterEvent(_message.Message):
    __slots__ = ("timestamp", "kind", "subject", "message", "stimulus_id", "reason", "object_kind")
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STIMULUS_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    OBJECT_KIND_FIELD_NUMBER: _ClassVar[int]
    timestamp: float
    kind: str
    subject: str
    message: str
    stimulus_id: str
    reason: str
    object_kind: str
    def __init__(self, timestamp: _Optional[float] = ..., kind: _Optional[str] = ..., subject: _Optional[str] = ..., message: _Optional[str] = ..., stimulus_id: _Optional[str] = ..., reason: _Optional[str] = ..., object_kind: _Optional[str] = ...) -> None: ...

class SimulatedGroup(_message.Message):
    __slots__ = ("name", "template", "max_new")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    MAX_NEW_FIELD_NUMBER: _ClassVar[int]
    name: str
    template: _common_pb2.AgentInfo
    max_new: int
    def __init__(self, name: _Optional[str] = ..., template: _Optional[_Union[_common_pb2.AgentInfo, _Mapping]] = ..., max_new: _Optional[int] = ...) -> None: ...

class SimulateRequest(_message.Message):
    __slots__ = ("groups", "priority_cutoff", "remove_agent_ids", "utilization_threshold")
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CUTOFF_FIELD_NUMBER: _ClassVar[int]
    REMOVE_AGENT_IDS_FIELD_NUMBER: _ClassVar[int]
    UTILIZATION_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[SimulatedGroup]
    priority_cutoff: int
    remove_agent_ids: _containers.RepeatedScalarFieldContainer[str]
    utilization_threshold: float
    def __init__(self, groups: _Optional[_Iterable[_Union[SimulatedGroup, _Mapping]]] = ..., priority_cutoff: _Optional[int] = ..., remove_agent_ids: _Optional[_Iterable[str]] = ..., utilization_threshold: _Optional[float] = ...) -> None: ...

class SimulateResponse(_message.Message):
    __slots__ = ("result_json",)
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    result_json: str
    def __init__(self, result_json: _Optional[str] = ...) -> None: ...
