"""The web UI in a real browser (headless Chromium) against a real master with real agents.

One cluster, one story, as an operator would follow it: the cluster page shows the agents by
zone; a framework's tasks appear on the tasks page without a reload; a serving framework
preempts batch tasks, and the operator follows it from the events timeline (filtered to
Preempted) to the victim's page, its framework and back; a gang that cannot fit is on the
pending page with the master's reason. Each page's screenshot is what docs/ui.md shows
(CORRAL_UI_SCREENSHOTS=docs/ui writes them there).

The master is secure, as one started with no flags is (TLS from the local CA): the browser
trusts that CA (browser.py) and the operator signs in at /login with a token of
`corral token`, as docs/ui.md says; when the token expires the page goes back to the form,
which says why, and a new token returns to where the operator was.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.master.ui.common import STATUSES
from corral.v1 import common_pb2 as pb
from tests.e2e.browser import Browser, chromium
from tests.master_http import issue_token

pytestmark = pytest.mark.e2e

WAIT = 30.0


class Filler(sdk.Scheduler):
    """Launches tasks of its demand's shape into every offer until ``count`` live."""

    def __init__(self, demand: str, cpus: float, klass: str, count: int) -> None:
        self.demand = sdk.Demand(demand, count, cpus=cpus, mem=64, priority_class=klass)
        self.launched = 0
        self.running: set[str] = set()
        self.ended: list[sdk.TaskStatus] = []
        self.changed = asyncio.Event()

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        d = self.demand
        for offer in offers:
            want = d.count - (self.launched - len(self.ended))
            n = max(0, min(want, int(offer.resources.cpus / d.cpus), int(offer.resources.mem / 64)))
            if n == 0:
                await driver.decline([offer.id], refuse_seconds=0.2)
                continue
            tasks = []
            for _ in range(n):
                tasks.append(
                    sdk.task(
                        f"{d.name}-{self.launched}",
                        "sleep 600",
                        cpus=d.cpus,
                        mem=64,
                        demand=d.name,
                        priority_class=d.priority_class,
                        simulate_seconds=600,
                    )
                )
                self.launched += 1
            await driver.launch([offer], tasks, refuse_seconds=0.2)

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if status.state == pb.TASK_STATE_RUNNING:
            self.running.add(status.task_id)
        elif sdk.is_terminal(status.state):
            self.running.discard(status.task_id)
            self.ended.append(status)
        self.changed.set()


class Waiter(sdk.Scheduler):
    """Wants a gang that cannot fit; declines whatever it is offered."""

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        await driver.decline([o.id for o in offers], refuse_seconds=60)


async def until(check: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    async def poll() -> None:
        while not check():
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(poll(), timeout)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout:g}s waiting for {what}") from None


async def in_browser(fn: Callable[..., Any], *args: Any) -> Any:
    """Selenium blocks: run it off the event loop the frameworks' drivers run on."""
    return await asyncio.to_thread(fn, *args)


def cluster_ca(cluster: LocalCluster) -> Path:
    tls = cluster.tls
    assert isinstance(tls, sdk.TLS), f"the browser tests run against a TLS master, got {tls!r}"
    return tls.ca


async def where(b: Browser) -> str:
    return str(await in_browser(b.js, "return location.pathname + location.hash"))


def rows(b: Browser, selector: str) -> list[str]:
    found = b.js(
        "return [...document.querySelectorAll(arguments[0])].map((e) => e.innerText)", selector
    )
    return [str(x) for x in found]


async def test_an_operator_follows_the_cluster_in_the_web_ui(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=0,
        work_dir=tmp_path / "cluster",
        master_args=("--allocation-interval", "0.2"),
        agent_args=("--simulate",),
    ) as cluster:
        for i, zone in enumerate(("a", "b")):
            await cluster.add_agent(
                f"agent-{i}", "cpus:4;mem:1024;disk:100", attributes={"zone": zone}
            )
        await cluster.wait_for_agents(2, WAIT)
        token = await issue_token(cluster)
        with chromium(cluster.base_url, tmp_path, cluster_ca(cluster)) as b:
            # The operator opens the cluster page: the master asks for a token first, and
            # signing in goes on to the page asked for.
            await in_browser(b.open, "#/cluster")
            await in_browser(b.wait_text, "main", "This page needs a token")
            assert await where(b) == "/login#/cluster"
            await in_browser(b.sign_in, token.value)
            assert await where(b) == "/#/cluster"
            # The cluster page: both agents active, grouped by zone.
            await in_browser(b.wait_text, ".counts", "2 ✓ active")
            await in_browser(b.wait_text, "table.groups", "1 active")
            groups = await in_browser(rows, b, "table.groups tbody th")
            assert groups == ["a", "b"], groups
            agents_table = await in_browser(b.wait_text, "table.agents", "zone=a")
            assert "zone=b" in agents_table
            await follow_a_link_from_elsewhere(b)

            # A framework's tasks appear on the tasks page, live: the page is not reloaded.
            await in_browser(b.go, "#/tasks")
            await in_browser(b.wait_text, "main", "No tasks.")
            await in_browser(b.js, "window.notReloaded = true")
            batch = Filler("work", 1, "batch", 8)
            async with sdk.Driver(batch, sdk.FrameworkInfo(name="batch"), cluster.master) as db:
                await db.set_demands([batch.demand])
                await in_browser(b.wait_text, "table.tasks", "work-0")
                assert await in_browser(b.js, "return window.notReloaded === true")
                await until(lambda: len(batch.running) == 8, "8 batch tasks running")
                await in_browser(b.wait_text, "table.tasks", "RUNNING")

                serving = Filler("web", 2, "serving", 3)
                waiter = Waiter()
                # 4 members of 3 cpus on two agents of 4: never fits (and preempts nothing).
                gang = sdk.Demand("workers", 4, cpus=3, mem=64, min_member=4,
                                  priority_class="batch")  # fmt: skip
                async with (
                    sdk.Driver(serving, sdk.FrameworkInfo(name="serving"), cluster.master) as ds,
                    sdk.Driver(waiter, sdk.FrameworkInfo(name="trainer"), cluster.master) as dw,
                ):
                    await dw.set_demands([gang])
                    await ds.set_demands([serving.demand])
                    await until(lambda: len(serving.running) == 3, "3 serving tasks running")
                    await until(lambda: len(batch.ended) == 6, "6 batch tasks preempted")
                    await follow_the_preemption(b, ds.framework_id)
                    await see_why_the_gang_is_pending(b)
                    await screenshot_every_page(b, db.framework_id)
            # The one failed load expected: the task's files, which a simulated agent does
            # not have (the page says "Logs not available" and the master's reason).
            errors = [e for e in await in_browser(b.errors) if "/files/stdout?" not in e]
            assert errors == [], errors
            await the_session_ends(b, cluster)


async def follow_a_link_from_elsewhere(b: Browser) -> None:
    """A link to a page's route followed from another site (a ticket, a chat) arrives without
    the SameSite=Strict cookie: the sign-in form finds the browser signed in and goes on."""
    link = f"{b.base}/#/events?reason=Preempted"
    elsewhere = quote(f"<a id='go' href='{link}'>the events</a>")
    await in_browser(b.driver.get, f"data:text/html,{elsewhere}")
    await in_browser(b.click, "#go")
    await in_browser(
        b.wait,
        "location.pathname === '/' && location.hash === '#/events?reason=Preempted'",
        "the events page, without signing in again",
    )
    await in_browser(b.wait_text, "main", "Pause live updates")
    await in_browser(b.go, "#/cluster")


async def the_session_ends(b: Browser, cluster: LocalCluster) -> None:
    """The operator's token expires while the page is open: the page's next request is
    refused (401) and the page goes back to the sign-in form, which says why; a new token
    returns to the same route, live."""
    await in_browser(b.go, "#/tasks")
    await in_browser(b.wait_text, "table.tasks", "KILLED")
    short = await issue_token(cluster, ttl=1)
    await until(lambda: time.time() > short.expires + 1, "the one-second token to expire")
    # What the browser holds once its token expired (set as /login sets it).
    await in_browser(b.set_cookie, "corral_token", short.value)
    page = await in_browser(b.wait_text, "main", "Your session has ended")
    assert "corral token" in page
    assert await in_browser(b.js, "return location.pathname") == "/login"
    await in_browser(b.screenshot, "login")
    refused = await in_browser(b.errors)
    # The page's requests refused, and nothing else failed.
    assert refused and all("/api/v1/" in e and " 401 " in e for e in refused), refused
    fresh = await issue_token(cluster)
    await in_browser(b.sign_in, fresh.value)
    assert await where(b) == "/#/tasks"
    await in_browser(b.wait_text, "table.tasks", "KILLED")
    await in_browser(b.wait, "document.querySelector('.live-live')", "the live stream again")
    assert await in_browser(b.errors) == []
    # Signing out: the header names who is signed in; the button drops the cookie, and the
    # page asks for a token again.
    await in_browser(b.wait_text, "form.account", "Signed in as")
    await in_browser(b.click, "form.account button")
    await in_browser(b.wait_text, "main", "You have signed out")
    assert await in_browser(b.js, "return location.pathname") == "/login"
    await in_browser(b.open, "#/cluster")
    await in_browser(b.wait_text, "main", "This page needs a token")


async def follow_the_preemption(b: Browser, preemptor: str) -> None:
    await in_browser(b.go, "#/events")
    await in_browser(b.wait_text, "main", "Preempted")
    await in_browser(b.choose, "select[name=reason]", "Preempted")
    await in_browser(
        b.wait,
        "document.querySelectorAll('.vrow').length === 6",
        "the 6 Preempted events, alone in the timeline",
    )
    reasons = await in_browser(rows, b, ".vrow .ev-reason")
    assert reasons == ["Preempted"] * 6, reasons
    assert "reason=Preempted" in await in_browser(b.js, "return location.hash")
    await in_browser(b.screenshot, "events")

    # From the event to its task: killed, preempted, by whom, and its history says so.
    subject = await in_browser(b.js, "return document.querySelector('.vrow .ev-subject a').text")
    await in_browser(b.click, ".vrow .ev-subject a")
    page = await in_browser(b.wait_text, "main", "KILLED")
    assert f"Task {subject}" in page
    assert "PREEMPTED" in page, page
    assert preemptor in page, page  # the message names the framework it was preempted for
    history = await in_browser(b.wait_text, "table.history", "Preempted")
    assert subject in history
    logs = await in_browser(b.wait_text, "main", "Logs not available")
    assert "Sandbox logs" in logs
    await in_browser(b.screenshot, "task")

    # Its framework's page, linked from the task.
    await in_browser(b.click, "dl.fields a[href^='#/framework/']")
    framework = await in_browser(b.wait_text, "main", "Framework batch")
    assert "Latest tasks" in framework
    await in_browser(b.wait_text, "table.history", "DemandsSet")


async def see_why_the_gang_is_pending(b: Browser) -> None:
    await in_browser(b.go, "#/pending")
    page = await in_browser(b.wait_text, "main", "Demand workers")
    assert "of trainer" in page, page
    why = await in_browser(b.wait_text, ".demand .why", "insufficient cpus")
    assert "2 agents" in why or "of 2 agents" in why, why
    gang = await in_browser(b.text, ".demand .gang")
    assert "0 of 4 members fit now" in gang, gang
    reasons = await in_browser(rows, b, "table.reasons tbody th")
    assert "insufficient cpus" in reasons, reasons
    await in_browser(b.screenshot, "pending")


async def screenshot_every_page(b: Browser, batch_id: str) -> None:
    await in_browser(b.go, "#/frameworks")
    table = await in_browser(b.wait_text, "table.frameworks", "trainer")
    assert "batch" in table and "serving" in table
    await in_browser(b.wait_text, "table.roles", "*")
    await in_browser(b.screenshot, "frameworks")

    await in_browser(b.go, "#/cluster")
    await in_browser(b.wait_text, "table.agents", "zone=a")
    await in_browser(b.wait, "document.querySelectorAll('.chart canvas').length >= 2", "charts")
    await in_browser(b.screenshot, "cluster")
    agent_id = await in_browser(b.text, "table.agents tbody tr:first-child th .mono")
    await in_browser(b.click, "table.agents tbody tr:first-child th a")
    agent = await in_browser(b.wait_text, "main", "Tasks (")
    assert agent_id and agent_id in agent and "zone=" in agent, agent
    await in_browser(b.wait_text, "table.tasks", "RUNNING")
    await in_browser(b.screenshot, "agent")

    await in_browser(b.go, f"#/framework/{batch_id}")
    await in_browser(b.wait_text, "main", "Why it is or is not offered")
    await in_browser(b.screenshot, "framework")
    await in_browser(b.go, "#/tasks")
    await in_browser(b.wait_text, "table.tasks", "KILLED")
    await in_browser(b.screenshot, "tasks")


# The WCAG contrast ratio of every element that shows text, against the background it is
# drawn on (the nearest ancestor's that is not transparent).
WORST_CONTRAST = """
const channel = (v) => {
  v /= 255;
  return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
};
const luminance = (css) => {
  const [r, g, b] = css.match(/[\\d.]+/g).slice(0, 3).map(Number).map(channel);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
};
const background = (el) => {
  for (; el; el = el.parentElement) {
    const c = getComputedStyle(el).backgroundColor;
    if (c && c !== "transparent" && !/rgba\\(.*,\\s*0\\)$/.test(c)) return c;
  }
  return "rgb(255, 255, 255)";
};
const out = [];
for (const el of document.querySelectorAll("body *")) {
  const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  if (!own || !el.getClientRects().length) continue;
  const style = getComputedStyle(el);
  if (style.visibility === "hidden" || style.display === "none") continue;
  const a = luminance(style.color), b = luminance(background(el));
  const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  out.push([ratio, el.tagName + "." + el.className + ": " + el.textContent.trim().slice(0, 40)]);
}
out.sort((x, y) => x[0] - y[0]);
return out.slice(0, 5);
"""


async def test_keyboard_and_contrast(tmp_path: Path) -> None:
    async with LocalCluster(
        agents=1,
        agent_resources="cpus:2;mem:512;disk:10",
        work_dir=tmp_path / "cluster",
        agent_args=("--simulate",),
    ) as cluster:
        token = await issue_token(cluster)
        with chromium(cluster.base_url, tmp_path, cluster_ca(cluster)) as b:
            # The sign-in form: the token field has the focus, its text reads well, and a
            # wrong token is refused in words.
            await in_browser(b.open, "#/cluster")
            await in_browser(b.wait_text, "main", "This page needs a token")
            assert await in_browser(b.js, "return document.activeElement.name") == "token"
            worst = await in_browser(b.js, WORST_CONTRAST)
            assert worst and worst[0][0] >= 4.5, ("/login", worst)
            page = await in_browser(b.sign_in, "not-a-token")
            assert "That token is not valid" in page, page
            worst = await in_browser(b.js, WORST_CONTRAST)
            assert worst and worst[0][0] >= 4.5, ("/login refused", worst)
            refused = await in_browser(b.errors)
            (answer,) = refused  # the form's answer to the wrong token, and nothing else
            assert "/login " in answer and " 401 " in answer, answer
            await in_browser(b.sign_in, token.value)
            assert await where(b) == "/#/cluster"
            await in_browser(b.wait_text, ".counts", "1 ✓ active")
            await in_browser(b.wait_text, "table.agents", "active")
            # A status is told in words, not by colour alone.
            badges = await in_browser(rows, b, ".badge")
            # One per agent status the counts show (master/ui/common.py STATUSES), and the one
            # agent's own.
            assert len(badges) == len(STATUSES) + 1, badges
            assert all(text.strip() for text in badges), badges
            for route in ("#/cluster", "#/events", "#/frameworks", "#/pending", "#/tasks"):
                await in_browser(b.go, route)
                await in_browser(
                    b.wait, "!document.querySelector('main').innerText.includes('Loading')", route
                )
                worst = await in_browser(b.js, WORST_CONTRAST)
                assert worst and worst[0][0] >= 4.5, (route, worst)

            # From a fresh load: the first Tab stop skips to the content; then the sections.
            await in_browser(b.open, "#/cluster")
            await in_browser(b.wait_text, ".counts", "1 ✓ active")
            await in_browser(press, b, "TAB")
            assert await in_browser(b.js, "return document.activeElement.className") == "skip"
            await in_browser(press, b, "ENTER")
            assert await in_browser(b.js, "return document.activeElement.id") == "main"
            await in_browser(b.open, "#/cluster")
            await in_browser(b.wait_text, ".counts", "1 ✓ active")
            for _ in range(6):  # skip link, then Cluster, Frameworks, Tasks, Pending, Events
                await in_browser(press, b, "TAB")
            assert await in_browser(b.js, "return document.activeElement.innerText") == "Events"
            await in_browser(press, b, "ENTER")
            await in_browser(
                b.wait,
                "document.activeElement.tagName === 'H1'"
                " && document.activeElement.innerText === 'Events'",
                "the focus on the Events heading",
            )
            assert await in_browser(b.js, "return location.hash") == "#/events"
            current = await in_browser(b.text, "nav a[aria-current=page]")
            assert current == "Events"
            await in_browser(press, b, "TAB")
            assert await in_browser(b.js, "return document.activeElement.name") == "reason"
            assert await in_browser(b.js, "return document.querySelector('.vlist').tabIndex") == 0
            assert await in_browser(b.errors) == []


def press(b: Browser, key: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ActionChains(b.driver).send_keys(getattr(Keys, key)).perform()
