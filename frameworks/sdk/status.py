"""Publishing a service's status to the master (``Operator.PublishStatus``): what the web UI's
node groups and queues views show (docs/ui.md, "Services"), as Kubernetes' cluster autoscaler
writes its status ConfigMap.

``StatusPublisher(master, service, kind, tls)`` keeps a detector of the leading master for the
service's lifetime; ``await publisher.publish(document, ttl)`` sends one document (a JSON object
of the kind's shape). ``CallError`` when the master refuses it (PERMISSION_DENIED: the principal
lacks ``operator: [PublishStatus]``, or another principal's status is still fresh;
INVALID_ARGUMENT: the document is not of the kind's shape) or cannot be asked (UNAVAILABLE).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from corral.detector import make_detector, parse_master
from corral.frameworks.sdk.leader_calls import call_leader
from corral.tls import Credentials, resolve
from corral.v1.operator_pb2 import PublishStatusRequest


class StatusPublisher:
    def __init__(
        self,
        master: str,
        service: str,
        kind: str,
        tls: Credentials | None = None,
        timeout: float = 5.0,
    ) -> None:
        self.detector = make_detector(parse_master(master))
        self.tls = resolve(tls)
        self.service = service
        self.kind = kind
        self.timeout = timeout

    async def publish(self, document: Mapping[str, Any], ttl: float = 0.0) -> None:
        request = PublishStatusRequest(
            service=self.service,
            kind=self.kind,
            document_json=json.dumps(document, default=str, allow_nan=False),
            ttl_seconds=ttl,
        )
        await call_leader(self.detector, self.tls, "PublishStatus", request, self.timeout)

    async def close(self) -> None:
        await self.detector.close()
