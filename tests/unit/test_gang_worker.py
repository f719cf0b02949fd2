"""The gang trainer's default worker without a cluster (frameworks/gang/train.py, comm.py,
checkpoint.py, worker.py): the math converges, ranks agree through the allreduce, a lost
peer ends a worker within its timeout, checkpoints are whole and a run resumes from one."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from corral.frameworks.gang import checkpoint, comm, train, worker
from corral.frameworks.sdk.testing.local_cluster import free_port


def test_shards_are_deterministic_per_seed_and_rank() -> None:
    a, b = train.shard(7, 1), train.shard(7, 1)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
    assert not np.array_equal(train.shard(7, 2).x, a.x)
    assert not np.array_equal(train.shard(8, 1).x, a.x)


def test_the_gradient_matches_finite_differences() -> None:
    data = train.shard(0, 0, size=32)
    w = np.random.default_rng(1).standard_normal(train.DIM)
    grad, sse, _ = train.local_gradient(data, w)
    h = 1e-6
    for i in (0, 5, train.DIM - 1):
        e = np.zeros(train.DIM)
        e[i] = h
        up = train.local_gradient(data, w + e)[1]
        down = train.local_gradient(data, w - e)[1]
        assert grad[i] == pytest.approx((up - down) / (2 * h), rel=1e-5)
    assert sse == pytest.approx(float(np.sum((data.x @ w - data.y) ** 2)))


def test_gradient_descent_on_all_shards_converges_to_the_noise_floor() -> None:
    shards = [train.shard(0, r) for r in range(4)]
    w = train.initial_weights()
    for _ in range(200):
        parts = [train.local_gradient(s, w) for s in shards]
        n = sum(p[2] for p in parts)
        loss = sum(p[1] for p in parts) / n
        w = train.step(w, sum(p[0] for p in parts) / n)
    assert loss < 1.5 * train.NOISE**2
    assert np.abs(w - train.true_weights(0)).max() < 0.05


def in_threads(world: int, target: Any) -> list[Any]:
    """Run ``target(rank)`` for every rank at once; the results (or exceptions) by rank."""
    results: list[Any] = [None] * world

    def body(rank: int) -> None:
        try:
            results[rank] = target(rank)
        except Exception as err:  # returned for the test to assert on
            results[rank] = err

    threads = [threading.Thread(target=body, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "a rank hung"
    return results


def test_the_allreduce_gives_every_rank_the_sum() -> None:
    port = free_port()

    def rank(r: int) -> list[float]:
        group = comm.Group.connect(r, 3, "127.0.0.1", port, timeout=10)
        try:
            first = group.broadcast(np.array([42.0]) if r == 0 else None)
            total = group.allreduce_sum(np.array([r, 10.0 * r]))
            return [*first, *total]
        finally:
            group.close()

    assert in_threads(3, rank) == [[42.0, 3.0, 30.0]] * 3


def test_a_silent_peer_ends_rank0_within_the_timeout() -> None:
    port = free_port()

    def rank(r: int) -> Any:
        group = comm.Group.connect(r, 2, "127.0.0.1", port, timeout=0.5)
        try:
            if r == 0:
                return group.allreduce_sum(np.zeros(2))
            time.sleep(1.5)  # rank 1 "hangs" past rank 0's timeout, then leaves
            return None
        finally:
            group.close()

    began = time.monotonic()
    lost, _ = in_threads(2, rank)
    assert isinstance(lost, comm.PeerLost) and "no message from rank 1 within 0.5 s" in str(lost)
    assert time.monotonic() - began < 5


def test_a_dead_rank0_ends_the_others_and_a_missing_rank0_is_not_waited_for() -> None:
    port = free_port()
    with socket.create_server(("127.0.0.1", port)) as server:
        server.settimeout(5)

        def rank1() -> Any:
            group = comm.Group.connect(1, 2, "127.0.0.1", port, timeout=5)
            try:
                group.allreduce_sum(np.zeros(1))
            except comm.PeerLost as err:
                return err
            finally:
                group.close()
            return None

        got: list[Any] = []
        t = threading.Thread(target=lambda: got.append(rank1()))
        t.start()
        conn, _ = server.accept()
        with conn:
            comm.recv_array(conn, "rank 1", 5)  # its hello
            comm.recv_array(conn, "rank 1", 5)  # its part of the sum: then rank 0 dies
        t.join(10)
    assert "rank 0 closed the connection" in str(got[0])
    with pytest.raises(comm.PeerLost, match=r"cannot reach rank 0 .* within 0\.3 s"):
        comm.Group.connect(1, 2, "127.0.0.1", free_port(), timeout=0.3)


def test_checkpoints_are_replaced_whole(tmp_path: Path) -> None:
    assert checkpoint.load(tmp_path) is None
    checkpoint.save(tmp_path, 50, [1.0, 2.0], 0.5)
    checkpoint.save(tmp_path, 100, [3.0, 4.0], 0.25)
    assert checkpoint.load(tmp_path) == (100, [3.0, 4.0], 0.25)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.json"]  # no temp left


def env(rank: int, world: int, port: int, directory: Path, steps: int) -> dict[str, str]:
    return {
        "RANK": str(rank),
        "WORLD_SIZE": str(world),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "GANG_CHECKPOINT_DIR": str(directory),
        "GANG_STEPS": str(steps),
        "GANG_CHECKPOINT_EVERY": "40",
        "GANG_PEER_TIMEOUT": "10",
    }


def test_workers_train_checkpoint_and_resume(tmp_path: Path) -> None:
    port = free_port()
    cfgs = [worker.Config.from_env(env(r, 2, port, tmp_path, 100)) for r in range(2)]
    first = in_threads(2, lambda r: worker.run(cfgs[r]))
    assert first[1] is None and first[0]["resumed_from_step"] == 0
    assert first[0]["final_loss"] < 1.5 * train.NOISE**2
    assert checkpoint.load(tmp_path)[0] == 100  # type: ignore[index]
    assert json.loads((tmp_path / "result.json").read_text()) == first[0]
    port = free_port()
    more = [worker.Config.from_env(env(r, 2, port, tmp_path, 150)) for r in range(2)]
    again = in_threads(2, lambda r: worker.run(more[r]))
    assert again[0]["resumed_from_step"] == 100 and again[0]["steps"] == 150


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"RANK": None}, "RANK is not set"),
        ({"RANK": "x"}, "RANK='x' is not a int"),
        ({"RANK": "2"}, "RANK=2 is not in 0..WORLD_SIZE-1 (WORLD_SIZE=2)"),
        ({"MASTER_PORT": "0"}, "MASTER_PORT=0 is not a port"),
        ({"GANG_CHECKPOINT_DIR": None}, "GANG_CHECKPOINT_DIR is not set"),
    ],
)
def test_a_bad_environment_is_one_line_and_exit_2(
    change: dict[str, str | None], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    e: dict[str, str] = env(0, 2, 31000, Path("/tmp/x"), 10)
    for k, v in change.items():
        if v is None:
            del e[k]
        else:
            e[k] = v
    assert worker.main(e) == 2
    assert capsys.readouterr().err == f"gang worker: bad environment: {message}\n"
