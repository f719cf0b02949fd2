"""The sign-in form returns only to a route of the page, and shows what it is given escaped
(master/http/login_page.py; the form itself is driven in a browser by tests/e2e/test_web_ui.py)."""

from __future__ import annotations

import pytest

from corral.master.http import login_page


@pytest.mark.parametrize(
    "route",
    ["#/cluster", "#/events?reason=Preempted,AgentLost", "#/task/web-1?framework_id=f-1", "#/"],
)
def test_a_route_of_the_page_is_kept(route: str) -> None:
    assert login_page.route_of(route) == route


@pytest.mark.parametrize(
    "text",
    [
        "",
        "https://elsewhere.example/",
        "//elsewhere.example/#/cluster",
        "/api/v1/state",
        "#cluster",
        '#/x"><script>alert(1)</script>',
        "#/x\r\nSet-Cookie: a=b",
        "#/" + "a" * 501,
    ],
)
def test_anything_else_returns_to_the_page_itself(text: str) -> None:
    assert login_page.route_of(text) == ""


def test_the_form_keeps_a_checked_route_and_escapes_the_refusal() -> None:
    form = login_page.form(login_page.EXPIRED, "#/events?reason=Preempted")
    assert form.status == 200 and form.text is not None
    assert 'name="next" value="#/events?reason=Preempted"' in form.text
    assert "Your session has ended" in form.text
    hostile = login_page.form(login_page.ASK, '#/x"><script>')
    assert hostile.text is not None and 'name="next" value=""' in hostile.text
    page = login_page.refused("principal <b>x</b> may not call GetState")
    assert page.status == 403 and page.text is not None
    assert "principal &lt;b&gt;x&lt;/b&gt; may not call GetState" in page.text
