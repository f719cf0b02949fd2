"""`corral run hello`: usage errors exit 2, failures exit 1 with one line, no traceback."""

from __future__ import annotations

import grpc
import pytest

from corral.cli.main import main
from corral.frameworks import sdk
from corral.frameworks.examples import hello


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tasks", "0"], "must be at least 1"),
        (["--tasks", "many"], "is not a whole number"),
        (["--master", "nowhere"], "is not HOST:PORT"),
        (["--connect-timeout", "-1"], "must be a positive number"),
    ],
)
def test_bad_arguments_are_usage_errors(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "hello", *args])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_an_unknown_framework_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "nosuch"])
    assert exited.value.code == 2


@pytest.mark.parametrize(
    ("raised", "line"),
    [
        (
            sdk.ConnectError("x"),
            "corral run: cannot reach the master at 127.0.0.1:9 within 2 s "
            "(is `corral master` running?)",
        ),
        (
            sdk.CallError("Subscribe", grpc.StatusCode.INVALID_ARGUMENT, "role 'x' is unknown"),
            "corral run: Subscribe failed: INVALID_ARGUMENT: role 'x' is unknown",
        ),
        (sdk.FrameworkError("removed"), "corral run: removed"),
    ],
)
def test_failures_are_one_line_and_exit_1(
    raised: Exception,
    line: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def failing_main(*args: object) -> int:
        raise raised

    monkeypatch.setattr(hello, "main", failing_main)
    code = main(["run", "hello", "--master", "127.0.0.1:9", "--connect-timeout", "2"])
    assert code == 1
    assert capsys.readouterr().err == line + "\n"


def test_the_exit_code_is_the_example_s(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[object, ...]] = []

    async def fake_main(*args: object) -> int:
        seen.append(args)
        return 1  # some task did not finish

    monkeypatch.setattr(hello, "main", fake_main)
    assert main(["run", "hello", "--tasks", "7", "--role", "batch"]) == 1
    assert seen == [("127.0.0.1:5050", 7, "batch", 10.0)]
