from corral.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AgentLossReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AGENT_LOSS_REASON_UNSPECIFIED: _ClassVar[AgentLossReason]
    AGENT_LOSS_REASON_UNREACHABLE: _ClassVar[AgentLossReason]
    AGENT_LOSS_REASON_REMOVED: _ClassVar[AgentLossReason]
AGENT_LOSS_REASON_UNSPECIFIED: AgentLossReason
AGENT_LOSS_REASON_UNREACHABLE: AgentLossReason
AGENT_LOSS_REASON_REMOVED: AgentLossReason

class SubscribeRequest(_message.Message):
    __slots__ = ("framework_info",)
    FRAMEWORK_INFO_FIELD_NUMBER: _ClassVar[int]
    framework_info: _common_pb2.FrameworkInfo
    def __init__(self, framework_info: _Optional[_Union[_common_pb2.FrameworkInfo, _Mapping]] = ...) -> None: ...

class Caller(_message.Message):
    __slots__ = ("framework_id", "stream_id")
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    framework_id: str
    stream_id: str
    def __init__(self, framework_id: _Optional[str] = ..., stream_id: _Optional[str] = ...) -> None: ...

class CallResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Call(_message.Message):
    __slots__ = ("id", "timeout_seconds", "quiet", "accept", "decline", "suppress", "revive", "kill", "acknowledge", "reconcile", "teardown", "set_demands")
    ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    QUIET_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_FIELD_NUMBER: _ClassVar[int]
    DECLINE_FIELD_NUMBER: _ClassVar[int]
    SUPPRESS_FIELD_NUMBER: _ClassVar[int]
    REVIVE_FIELD_NUMBER: _ClassVar[int]
    KILL_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGE_FIELD_NUMBER: _ClassVar[int]
    RECONCILE_FIELD_NUMBER: _ClassVar[int]
    TEARDOWN_FIELD_NUMBER: _ClassVar[int]
    SET_DEMANDS_FIELD_NUMBER: _ClassVar[int]
    id: int
    timeout_seconds: float
    quiet: bool
    accept: AcceptRequest
    decline: DeclineRequest
    suppress: SuppressRequest
    revive: ReviveRequest
    kill: KillRequest
    acknowledge: AcknowledgeRequest
    reconcile: ReconcileRequest
    teardown: TeardownRequest
    set_demands: SetDemandsRequest
    def __init__(self, id: _Optional[int] = ..., timeout_seconds: _Optional[float] = ..., quiet: _Optional[bool] = ..., accept: _Optional[_Union[AcceptRequest, _Mapping]] = ..., decline: _Optional[_Union[DeclineRequest, _Mapping]] = ..., suppress: _Optional[_Union[SuppressRequest, _Mapping]] = ..., revive: _Optional[_Union[ReviveRequest, _Mapping]] = ..., kill: _Optional[_Union[KillRequest, _Mapping]] = ..., acknowledge: _Optional[_Union[AcknowledgeRequest, _Mapping]] = ..., reconcile: _Optional[_Union[ReconcileRequest, _Mapping]] = ..., teardown: _Optional[_Union[TeardownRequest, _Mapping]] = ..., set_demands: _Optional[_Union[SetDemandsRequest, _Mapping]] = ...) -> None: ...

class CallBatch(_message.Message):
    __slots__ = ("calls",)
    CALLS_FIELD_NUMBER: _ClassVar[int]
    calls: _containers.RepeatedCompositeFieldContainer[Call]
    def __init__(self, calls: _Optional[_Iterable[_Union[Call, _Mapping]]] = ...) -> None: ...

class CallResult(_message.Message):
    __slots__ = ("id", "code", "message")
    ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    id: int
    code: int
    message: str
    def __init__(self, id: _Optional[int] = ..., code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class CallResultBatch(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[CallResult]
    def __init__(self, results: _Optional[_Iterable[_Union[CallResult, _Mapping]]] = ...) -> None: ...

class Filters(_message.Message):
    __slots__ = ("refuse_seconds",)
    REFUSE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    refuse_seconds: float
    def __init__(self, refuse_seconds: _Optional[float] = ...) -> None: ...

class LaunchOperation(_message.Message):
    __slots__ = ("tasks",)
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[_common_pb2.TaskInfo]
    def __init__(self, tasks: _Optional[_Iterable[_Union[_common_pb2.TaskInfo, _Mapping]]] = ...) -> None: ...

class Operation(_message.Message):
    __slots__ = ("launch",)
    LAUNCH_FIELD_NUMBER: _ClassVar[int]
    launch: LaunchOperation
    def __init__(self, launch: _Optional[_Union[LaunchOperation, _Mapping]] = ...) -> None: ...

class AcceptRequest(_message.Message):
    __slots__ = ("caller", "offer_ids", "operations", "filters")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    OFFER_IDS_FIELD_NUMBER: _ClassVar[int]
    OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    caller: Caller
    offer_ids: _containers.RepeatedScalarFieldContainer[str]
    operations: _containers.RepeatedCompositeFieldContainer[Operation]
    filters: Filters
    def __init__(self, caller: _Optional[_Union[Caller, _Mapping]] = ..., offer_ids: _Optional[_Iterable[str]] = ..., operations: _Optional[_Iterable[_Union[Operation, _Mapping]]] = ..., filters: _Optional[_Union[Filters, _Mapping]] = ...) -> None: ...

class DeclineRequest(_message.Message):
    __slots__ = ("caller", "offer_ids", "filters")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    OFFER_IDS_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    caller: Caller
    offer_ids: _containers.RepeatedScalarFieldContainer[str]
    filters: Filters
    def __init__(self, caller: _Optional[_Union[Caller, _Mapping]] = ..., offer_ids: _Optional[_Iterable[str]] = ..., filters: _Optional[_Union[Filters, _Mapping]] = ...) -> None: ...

class SuppressRequest(_message.Message):
    __slots__ = ("caller",)
    CALLER_FIELD_NUMBER: _ClassVar[int]
    caller: Caller
    def __init__(self, caller: _Optional[_Union[Caller, _Mapping]] = ...) -> None: ...

class ReviveRequest(_message.Message):
    __slots__ = ("caller",)
    CALLER_FIELD_NUMBER: _ClassVar[int]
    caller: Caller
    def __init__(self, caller: _Optional[_Union[Caller, _Mapping]] = ...) -> None: ...

class KillRequest(_message.Message):
    __slots__ = ("caller", "task_id", "agent_id", "kill_grace_period_seconds", "reason", "message")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    KILL_GRACE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    caller: Caller
    task_id: str
    agent_id: str
    kill_grace_period_seconds: float
    reason: _common_pb2.TaskReason
    message: str
    def __init__(self, caller: _Optional[_Union[Caller, _Mapping]] = ..., task_id: _Optional[str] = ..., agent_id: _Optional[str] = ..., kill_grace_period_seconds: _Optional[float] = ..., reason: _Optional[_Union[_common_pb2.TaskReason, str]] = ..., message: _Optional[str] = ...) -> None: ...

class Acknowledgement(_message.Message):
    __slots__ = ("agent_id", "task_id", "uuid")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    task_id: str
    uuid: bytes
    def __init__(self, agent_id: _Optional[str] = ..., task_id: _Optional[str] = ..., uuid: _Optional[bytes] = ...) -> None: ...

class AcknowledgeRequest(_message.Message):
    __slots__ = ("caller", "acknowledgements")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGEMENTS_FIELD_NUMBER: _ClassVar[int]
    caller: Caller
    acknowledgements: _containers.RepeatedCompositeFieldContainer[Acknowledgement]
    def __init__(self, caller: _Optional[_Union[Caller, _Mapping]] = ..., acknowledgements: _Optional[_Iterable[_Union[Acknowledgement, _Mapping]]] = ...) -> None: ...

class ReconcileTask(_message.Message):
    __slots__ = ("task_id", "agent_id")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    agent_id: str
    def __init__(self, task_id: _Optional[str] = ..., agent_id: _Optional[str] = ...) -> None: ...

class ReconcileRequest(_message.Message):
    __slots__ = ("caller", "tasks")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    caller: Caller
    tasks: _containers.RepeatedCompositeFieldContainer[ReconcileTask]
    def __init__(self, caller: _Optional[_Union[Caller, _Mapping]] = ..., tasks: _Optional[_Iterable[_Union[ReconcileTask, _Mapping]]] = ...) -> None: ...

class TeardownRequest(_message.Message):
    __slots__ = ("caller",)
    CALLER_FIELD_NUMBER: _ClassVar[int]
    caller: Caller
    def __init__(self, caller: _Optional[_Union[Caller, _Mapping]] = ...) -> None: ...

class SetDemandsRequest(_message.Message):
    __slots__ = ("caller", "demands")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    DEMANDS_FIELD_NUMBER: _ClassVar[int]
    caller: Caller
    demands: _containers.RepeatedCompositeFieldContainer[_common_pb2.Demand]
    def __init__(self, caller: _Optional[_Union[Caller, _Mapping]] = ..., demands: _Optional[_Iterable[_Union[_common_pb2.Demand, _Mapping]]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("subscribed", "offers", "rescind", "update", "heartbeat", "error", "message", "agents_lost", "executor_terminated")
    SUBSCRIBED_FIELD_NUMBER: _ClassVar[int]
    OFFERS_FIELD_NUMBER: _ClassVar[int]
    RESCIND_FIELD_NUMBER: _ClassVar[int]
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    AGENTS_LOST_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_TERMINATED_FIELD_NUMBER: _ClassVar[int]
    subscribed: Subscribed
    offers: Offers
    rescind: Rescind
    update: Update
    heartbeat: Heartbeat
    error: Error
    message: _common_pb2.FrameworkMessage
    agents_lost: AgentsLost
    executor_terminated: _common_pb2.ExecutorTerminated
    def __init__(self, subscribed: _Optional[_Union[Subscribed, _Mapping]] = ..., offers: _Optional[_Union[Offers, _Mapping]] = ..., rescind: _Optional[_Union[Rescind, _Mapping]] = ..., update: _Optional[_Union[Update, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., message: _Optional[_Union[_common_pb2.FrameworkMessage, _Mapping]] = ..., agents_lost: _Optional[_Union[AgentsLost, _Mapping]] = ..., executor_terminated: _Optional[_Union[_common_pb2.ExecutorTerminated, _Mapping]] = ...) -> None: ...

class Subscribed(_message.Message):
    __slots__ = ("framework_id", "stream_id", "heartbeat_interval_seconds", "master_id", "epoch")
    FRAMEWORK_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MASTER_ID_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    framework_id: str
    stream_id: str
    heartbeat_interval_seconds: float
    master_id: str
    epoch: int
    def __init__(self, framework_id: _Optional[str] = ..., stream_id: _Optional[str] = ..., heartbeat_interval_seconds: _Optional[float] = ..., master_id: _Optional[str] = ..., epoch: _Optional[int] = ...) -> None: ...

class Offers(_message.Message):
    __slots__ = ("offers",)
    OFFERS_FIELD_NUMBER: _ClassVar[int]
    offers: _containers.RepeatedCompositeFieldContainer[_common_pb2.Offer]
    def __init__(self, offers: _Optional[_Iterable[_Union[_common_pb2.Offer, _Mapping]]] = ...) -> None: ...

class Rescind(_message.Message):
    __slots__ = ("offer_ids",)
    OFFER_IDS_FIELD_NUMBER: _ClassVar[int]
    offer_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, offer_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class Update(_message.Message):
    __slots__ = ("statuses",)
    STATUSES_FIELD_NUMBER: _ClassVar[int]
    statuses: _containers.RepeatedCompositeFieldContainer[_common_pb2.TaskStatus]
    def __init__(self, statuses: _Optional[_Iterable[_Union[_common_pb2.TaskStatus, _Mapping]]] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Error(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...

class AgentsLost(_message.Message):
    __slots__ = ("agents",)
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    agents: _containers.RepeatedCompositeFieldContainer[AgentLost]
    def __init__(self, agents: _Optional[_Iterable[_Union[AgentLost, _Mapping]]] = ...) -> None: ...

class AgentLost(_message.Message):
    __slots__ = ("agent_id", "hostname", "reason", "message")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    hostname: str
    reason: AgentLossReason
    message: str
    def __init__(self, agent_id: _Optional[str] = ..., hostname: _Optional[str] = ..., reason: _Optional[_Union[AgentLossReason, str]] = ..., message: _Optional[str] = ...) -> None: ...
