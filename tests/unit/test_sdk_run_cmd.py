"""`corral run hello`: usage errors exit 2, failures exit 1 with one line, no traceback."""

from __future__ import annotations

from pathlib import Path

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
            "corral run hello: cannot reach the master at 127.0.0.1:9 within 2 s "
            "(is `corral master` running?)",
        ),
        (
            sdk.CallError("Subscribe", grpc.StatusCode.INVALID_ARGUMENT, "role 'x' is unknown"),
            "corral run hello: Subscribe failed: INVALID_ARGUMENT: role 'x' is unknown",
        ),
        (sdk.FrameworkError("removed"), "corral run hello: removed"),
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


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["run", "batch", "--tasks", "1", "--bogus"], "usage: corral run batch "),
        (["run", "gang", "--workers", "1", "--steps", "1", "extra"], "usage: corral run gang "),
        (["run", "hello", "--tasks", "1", "--bogus"], "usage: corral run hello "),
        (["get", "agents", "--bogus"], "usage: corral get "),
        (["set", "weight", "web", "2", "--bogus"], "usage: corral set weight "),
    ],
)
def test_unknown_arguments_show_the_usage_of_the_command_they_were_given_to(
    argv: list[str], usage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage), err
    assert err.strip().splitlines()[-1].endswith(f"error: unrecognized arguments: {argv[-1]}")


@pytest.mark.parametrize("framework", ["batch", "gang"])
def test_a_failure_is_headed_with_the_framework_s_name_although_it_has_a_command_flag(
    framework: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # batch and gang have a --command flag of their own, which used to overwrite the name the
    # error line is headed with: "corral : SetDemands failed" / "corral None: ...".
    import importlib

    module = importlib.import_module(f"corral.frameworks.{framework}.run")
    refusal = sdk.CallError("SetDemands", grpc.StatusCode.INVALID_ARGUMENT, "unknown class 'x'")

    async def failing_main(*args: object, **kwargs: object) -> int:
        raise refusal

    monkeypatch.setattr(module, "main", failing_main)
    what = ["--tasks", "1"]
    if framework == "gang":
        what = ["--workers", "1", "--steps", "1", "--checkpoint-dir", str(tmp_path)]
    assert main(["run", framework, *what]) == 1
    assert capsys.readouterr().err == (
        f"corral run {framework}: SetDemands failed: INVALID_ARGUMENT: unknown class 'x'\n"
    )
