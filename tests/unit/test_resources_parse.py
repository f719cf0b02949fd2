"""The text form of resources (`--resources`, specs): each resource once, several port ranges
in one bracketed list, and a message that says what to write instead."""

from __future__ import annotations

import pytest

from corral.resources import ResourceError, Resources, parse_resources


def test_a_full_spec_with_several_port_ranges() -> None:
    r = parse_resources("cpus:4; mem:8192;disk:20000;gpus:1;ports:[31000-32000, 33000-33100]")
    assert r == Resources(4, 8192, 20000, 1, ((31000, 32000), (33000, 33100)))


def test_empty_text_is_no_resources() -> None:
    # Empty is a valid value for the parser (no reservations, say); the agent refuses it.
    assert parse_resources("").is_empty()
    assert parse_resources(" ; ").is_empty()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cpus:4;cpus:8", "cpus is given twice"),
        ("cpus:4;mem:1;mem:1", "mem is given twice"),
        (
            "ports:[1-2];ports:[3-4]",
            r"ports is given twice \(several ranges go in one list: ports:\[31000-32000,",
        ),
        ("ports:[1-2],[3-4]", r"ports must be one bracketed list of ranges, like ports:\["),
        ("ports:[1-2][3-4]", "ports must be one bracketed list of ranges"),
        ("ports:1-2", "ports must be one bracketed list of ranges"),
        ("ports:[1-2,x]", r"port range 'x' must look like 31000-32000 \(several: ports:\["),
        ("ports:[2-1]", "inverted"),
        ("cpus", "has no ':'"),
        ("cpu:4", "unknown resource 'cpu'"),
        ("cpus:four", "cpus must be a number"),
    ],
)
def test_bad_specs_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(ResourceError, match=message):
        parse_resources(text)
