"""The allocator's charge table against a dict of lists, compiled and as plain Python: random
histories of adds, takes and drops, through growth and backward-shift deletions."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.master.allocator import charge_table
from corral.master.allocator.charge_table import ChargeBook

Model = dict[tuple[int, int], list[float]]


@pytest.fixture(params=["compiled", "python"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "python":
        if not charge_table.COMPILED:
            pytest.skip("numba is not installed: the table already runs as Python")
        for name in ("_home", "_find", "_delete", "_add", "_take", "_give_back"):
            monkeypatch.setattr(charge_table, name, getattr(charge_table, name).py_func)
    yield str(request.param)


# Few distinct rows, so pairs collide, repeat and get deleted and re-added.
pairs = st.tuples(st.integers(0, 5), st.integers(0, 40))
amount = st.tuples(*[st.sampled_from([0.0, 0.5, 1.0, 3.0, 128.0])] * 4)
step = st.one_of(
    st.tuples(st.just("add"), st.lists(st.tuples(pairs, amount), max_size=30)),
    st.tuples(st.just("take"), st.lists(st.tuples(pairs, amount), max_size=30)),
    st.tuples(st.just("drop_framework"), st.integers(0, 5)),
    st.tuples(st.just("drop_agent"), st.integers(0, 40)),
)


def columns(
    entries: list[tuple[tuple[int, int], tuple[float, ...]]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(entries)
    fs = np.array([f for (f, _), _ in entries], dtype=np.intp)
    agents = np.array([a for (_, a), _ in entries], dtype=np.intp)
    amounts = np.array([x for _, x in entries], dtype=np.float64).reshape(n, 4)
    return fs, agents, amounts


def model_take(model: Model, key: tuple[int, int], amounts: tuple[float, ...]) -> list[float]:
    charge = model.get(key)
    if charge is None:
        return [float("nan")]
    back = [min(x, c) for x, c in zip(amounts, charge, strict=True)]
    left = [c - b for c, b in zip(charge, back, strict=True)]
    if all(x <= 0 for x in left):
        del model[key]
    else:
        model[key] = left
    return back


def check_same(book: ChargeBook, model: Model) -> None:
    assert len(book) == len(model)
    for (f, a), charge in model.items():
        assert book.get(f, a) == charge
    for f in range(6):
        agents, vals = book.of_framework(f)
        got = dict(zip(agents.tolist(), vals.tolist(), strict=True))
        assert got == {a: c for (g, a), c in model.items() if g == f}


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(step, max_size=25))
def test_charge_book_matches_a_dict(mode: str, steps: list[tuple[str, object]]) -> None:
    book = ChargeBook(16)  # small, so histories grow it
    model: Model = {}
    for kind, arg in steps:
        if kind == "add":
            assert isinstance(arg, list)
            if arg:
                book.add(*columns(arg))
            for key, x in arg:
                c = model.get(key, [0.0] * 4)
                model[key] = [y + z for y, z in zip(c, x, strict=True)]
        elif kind == "take":
            assert isinstance(arg, list)
            if arg:
                back = book.take(*columns(arg)).tolist()
                expected = [model_take(model, key, x) for key, x in arg]
                for got, want in zip(back, expected, strict=True):
                    if np.isnan(want[0]):
                        assert np.isnan(got[0])
                    else:
                        assert got == want
        elif kind == "drop_framework":
            agents, _ = book.of_framework(int(arg))  # type: ignore[call-overload]
            book.drop(np.full(len(agents), arg, dtype=np.int64), agents)
            model = {k: v for k, v in model.items() if k[0] != arg}
        else:
            fws, _ = book.of_agent(int(arg))  # type: ignore[call-overload]
            book.drop(fws, np.full(len(fws), arg, dtype=np.int64))
            model = {k: v for k, v in model.items() if k[1] != arg}
        check_same(book, model)


def test_all_zero_charge_is_not_kept(mode: str) -> None:
    book = ChargeBook()
    one = np.array([1], dtype=np.intp)
    book.add(one, one, np.array([[1.0, 0.0, 0.0, 0.0]]))
    assert book.take(one, one, np.array([[1.0, 5.0, 0.0, 0.0]])).tolist() == [[1.0, 0.0, 0.0, 0.0]]
    assert len(book) == 0 and book.get(1, 1) is None
