"""What the allocator's modules read and write of its state, as a Protocol: the arrays, masks,
books and roles ``DrfAllocator`` (numpy_allocator.py) holds, and the few of its methods they
call. ``cycle``, ``fastpath``, ``general_walk``, ``eligibility``, ``quota``, ``charge_moves``,
``refuse_filters``, ``rooms`` and ``explain`` take an ``AllocatorArrays`` first, so none of them
imports the class that imports them all (no import circle, TYPE_CHECKING included)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

from corral.master.allocator.charge_table import ChargeBook
from corral.master.allocator.fit_cache import FitCache
from corral.master.allocator.growable import RowIndex
from corral.master.allocator.interface import Scalars
from corral.master.allocator.masks.filters import FilterMatrix
from corral.master.allocator.masks.placement import PlacementMask
from corral.master.allocator.options import AllocatorOptions
from corral.master.allocator.reservations import ReservationBook
from corral.placement import AttributeConstraint, Taint, Toleration

Vec = list[float]
F64 = npt.NDArray[np.float64]
INF = math.inf
Kernel = Literal["numba", "numpy"]
RoleKeys = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64]]
KERNELS: tuple[Kernel, ...] = ("numba", "numpy")


class AllocatorArrays(Protocol):
    """``DrfAllocator``'s state as its modules see it (numpy_allocator.py says what each is)."""

    kernel: Kernel
    options: AllocatorOptions
    _min: tuple[tuple[float, float, float, float], ...]
    _min_array: F64
    _fair: tuple[int, ...]
    _agents: RowIndex
    _frameworks: RowIndex
    total: F64
    capacity: F64
    used: F64
    agent_alive: npt.NDArray[np.bool_]
    _agent_conditions: dict[str, npt.NDArray[np.bool_]]
    _framework_conditions: dict[str, npt.NDArray[np.bool_]]
    agent_seq: npt.NDArray[np.int64]
    count_ok: npt.NDArray[np.int64]
    alloc: F64
    fw_role: npt.NDArray[np.intp]
    fw_count: npt.NDArray[np.int64]
    fw_priority: npt.NDArray[np.int64]
    fw_alive: npt.NDArray[np.bool_]
    fw_active: npt.NDArray[np.bool_]
    charges: ChargeBook
    role_names: list[str]
    _role_index: dict[str, int]
    weight: list[float]
    guarantee: list[Vec]
    _guaranteed: bool
    limit: list[Vec]
    role_alloc: F64
    role_count: npt.NDArray[np.int64]
    filters: FilterMatrix
    placement: PlacementMask
    reservations: ReservationBook
    cluster: F64
    _seq: int
    _agent_order: npt.NDArray[np.intp] | None
    _agents_by_id: npt.NDArray[np.intp] | None
    _ids_by_id: npt.NDArray[np.object_]
    _fit_cache: FitCache
    _framework_ranks: npt.NDArray[np.int64] | None
    _last_plan_frameworks: npt.NDArray[np.intp]
    general_walks: int

    def agent_condition(self, name: str) -> npt.NDArray[np.bool_]: ...

    def framework_condition(self, name: str) -> npt.NDArray[np.bool_]: ...

    def _free_for(self, a: int, role: int) -> F64: ...

    def _unreserved_free(self, rows: npt.NDArray[np.intp] | slice) -> F64: ...

    def _live_agents(self) -> npt.NDArray[np.intp]: ...

    def _recount(self) -> None: ...

    def framework_ranks(self) -> npt.NDArray[np.int64]: ...

    def rank(
        self, frameworks: npt.NDArray[np.intp], fkey: F64, role_keys: RoleKeys, soft: int = -1
    ) -> npt.NDArray[np.intp]: ...

    def role_keys(self) -> RoleKeys: ...

    def last_offered(self, f: int) -> int: ...

    def offerable_agents(self, now: float) -> npt.NDArray[np.bool_]: ...

    def set_quota(self, role: str, guarantee: Scalars | None, limit: Scalars | None) -> None: ...

    def add_framework(
        self,
        framework_id: str,
        role: str,
        tolerations: Sequence[Toleration] = (),
        constraints: Sequence[AttributeConstraint] = (),
        gpu_resources: bool = False,
    ) -> None: ...

    def add_agent(
        self,
        agent_id: str,
        total: Scalars,
        attributes: Mapping[str, str],
        taints: Sequence[Taint],
        reservations: Mapping[str, Scalars] | None = None,
    ) -> None: ...
