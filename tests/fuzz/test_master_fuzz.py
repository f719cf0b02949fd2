"""Property-based fuzzing of a real master (issue 17, "Hardening").

Hypothesis drives one real master (and one simulated agent) with raw gRPC framework and agent
calls, valid, malformed and hostile mixed (``fuzz_master.CALLS``), and after every call checks
that no call ended UNKNOWN or INTERNAL and that the master's invariants hold on its Operator
state (``invariants.check_state``); every ``CLI_EVERY`` calls ``corral get agents`` must still
answer; at the end the master's timers must still fire (``fuzz_master.check_timers``).

``make test`` runs a small, reproducible run (``CORRAL_FUZZ_CALLS``, default 300, seed 0);
``make fuzz`` runs 10,000 calls. ``CORRAL_FUZZ_SEED`` picks another sequence; both runs print
the count of calls per status code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from corral.cli.get_cmd import fetch_state, rows
from corral.frameworks.sdk.testing import LocalCluster
from tests.fuzz.fuzz_master import (
    CALL_TIMEOUT,
    CALLERS,
    CALLS,
    MASTER_ARGS,
    Fuzzer,
    check_timers,
    format_counts,
)
from tests.fuzz.invariants import check_state
from tests.fuzz.raw_clients import LoopThread

pytestmark = pytest.mark.e2e

TARGET_CALLS = int(os.environ.get("CORRAL_FUZZ_CALLS", "300"))
BASE_SEED = int(os.environ.get("CORRAL_FUZZ_SEED", "0"))
CHECK_EVERY = int(os.environ.get("CORRAL_FUZZ_CHECK_EVERY", "1"))  # calls between state checks
# A comma-separated subset of CALLS' kinds, to focus a run (default: all of them).
KINDS = [k for k in os.environ.get("CORRAL_FUZZ_KINDS", "").split(",") if k] or list(CALLS)
DETAIL = bool(os.environ.get("CORRAL_FUZZ_DETAIL"))  # also print the counts per call variant
CLI_EVERY = 100  # calls between `corral get agents` checks
CLI = (sys.executable, "-m", "corral.cli.main")
STEPS = 50  # calls per hypothesis example
EXAMPLES = 10  # examples per round; rounds go on until TARGET_CALLS calls were made

# One call: its kind, variant, whose caller it uses, and a number that picks among what the
# fuzzer has seen (offers, tasks, agents) and seeds the random bytes.
CALL = st.sampled_from([k for k in KINDS for _ in range(CALLS[k][0])]).flatmap(
    lambda kind: st.tuples(
        st.just(kind),
        st.sampled_from(CALLS[kind][1]),
        st.sampled_from(CALLERS),
        st.integers(0, 2**31),
    )
)


@pytest.fixture(scope="module")
def fuzzer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LoopThread, Fuzzer]]:
    loop = LoopThread()
    cluster = LocalCluster(
        agents=1,
        work_dir=tmp_path_factory.mktemp("fuzz"),
        master_args=MASTER_ARGS,
        agent_args=("--simulate",),
    )
    loop.run(cluster.__aenter__(), 120)
    fuzz = Fuzzer(cluster)
    try:
        loop.run(fuzz.start(), 30)
        yield loop, fuzz
    finally:
        print("\n" + format_counts(fuzz, DETAIL))
        try:
            loop.run(fuzz.close(), 30)
        finally:
            loop.run(cluster.close(), 60)
            loop.close()


def make_machine(loop: LoopThread, fuzz: Fuzzer) -> type[RuleBasedStateMachine]:
    class MasterMachine(RuleBasedStateMachine):
        """Every step is one call against the live master, then its invariants."""

        @rule(call=CALL)
        def call(self, call: tuple[str, str, str, int]) -> None:
            loop.run(fuzz.call(*call), 4 * CALL_TIMEOUT)

        @invariant()
        def master_invariants(self) -> None:
            if fuzz.calls % CHECK_EVERY == 0:
                state = loop.run(fuzz.state(), 2 * CALL_TIMEOUT)
                try:
                    check_state(state)
                except AssertionError as err:
                    history = "\n  ".join(fuzz.history)
                    raise AssertionError(f"{err}\nlast calls:\n  {history}") from None
            assert fuzz.cluster.processes["master"].returncode is None, "the master exited"
            if fuzz.calls and fuzz.calls % CLI_EVERY == 0:
                table = rows("agents", fetch_state(fuzz.cluster.master, 2 * CALL_TIMEOUT))[1]
                assert table, "`corral get agents` lists no agent"

    return MasterMachine


def test_master_survives_fuzzing(fuzzer: tuple[LoopThread, Fuzzer]) -> None:
    loop, fuzz = fuzzer
    machine = make_machine(loop, fuzz)
    config = settings(
        max_examples=EXAMPLES,
        stateful_step_count=STEPS,
        deadline=None,
        database=None,
        # The master keeps its state between examples, so a failing example may not fail the
        # same way again: report it as found (with the calls before it) rather than shrink.
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    rounds = 0
    while fuzz.calls < TARGET_CALLS:
        run_state_machine_as_test(seed(BASE_SEED + rounds)(machine), settings=config)
        rounds += 1
    loop.run(check_timers(fuzz), 60)
    out = subprocess.run(
        [*CLI, "get", "agents", "-o", "json", "--master", fuzz.cluster.master],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 0, f"`corral get agents` failed: {out.stderr}"
    assert any(a["id"] == fuzz.real_agent_id for a in json.loads(out.stdout)), out.stdout
    bugs = {code: n for code, n in fuzz.codes.items() if code in ("UNKNOWN", "INTERNAL")}
    assert not bugs, f"calls ended with {bugs}"
    assert fuzz.calls >= TARGET_CALLS
    assert len(fuzz.codes) > 3, f"the fuzzer hit too few outcomes: {dict(fuzz.codes)}"
