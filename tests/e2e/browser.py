"""A headless Chromium for the web UI's tests: Debian's ``chromium`` driven by its
``chromium-driver`` through Selenium (.ci/run installs both, and ``libnss3-tools``).

The browser trusts the cluster's CA as an operator's would once they imported it, and nothing
else is relaxed (no --ignore-certificate-errors): Chromium on Linux reads the certificates a
user trusts from the NSS database in ``$HOME/.pki/nssdb``, so each browser gets a HOME of its
own, made for the test, whose database trusts that one CA (NSS's ``certutil``). The operator
signs in as one would: the page's /login form, with a token from ``corral token``.

Every wait is on a condition read from the page (a JavaScript expression), with a bounded
timeout and a failure message that names what was awaited and shows the page's text.
Selenium blocks: async tests call these methods through ``asyncio.to_thread`` so that the
frameworks they run on the same event loop keep going.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CERTUTIL = "/usr/bin/certutil"  # Debian's libnss3-tools
# Without the background-networking flags Chromium tries to reach Google's services, which a
# closed network refuses (and which a test has no business calling).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
)
WAIT = 30.0  # seconds for any one condition; generous for a loaded 2-core machine


def require_chromium() -> None:
    """Skip when Chromium, its driver or certutil is missing, except under CI, which must run
    these."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER, CERTUTIL) if not Path(p).exists()]
    if not missing:
        return
    reason = (
        f"{', '.join(missing)} not installed "
        "(apt-get install chromium chromium-driver libnss3-tools)"
    )
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


class Browser:
    def __init__(self, driver: Any, base: str, shots: Path) -> None:
        self.driver = driver
        self.base = base
        self.shots = shots

    def open(self, route: str) -> None:
        """Load the page afresh at ``route`` (``#/cluster``...): a new document even when only
        the route differs from the one shown (that alone would be a move inside the page)."""
        self.driver.get("about:blank")
        self.driver.get(f"{self.base}/{route}")

    def sign_in(self, token: str) -> str:
        """Type ``token`` into the /login form the browser shows and press its button, as a
        person would; returns the text of the page the master answered with (the page the
        form returns to, or the form again with its reason)."""
        from selenium.webdriver.common.by import By

        self.wait("document.querySelector('form[action=\"/login\"] input[name=token]')", "the form")
        self.js("window.beforeSignIn = true")  # gone once the answer is a new document
        field = self.driver.find_element(By.CSS_SELECTOR, "input[name=token]")
        field.clear()
        field.send_keys(token)
        self.driver.find_element(By.CSS_SELECTOR, "form[action='/login'] button").click()
        answered = "!window.beforeSignIn && document.readyState === 'complete'"
        self.wait(answered, "the master's answer to the sign-in form")
        return self.text("body")

    def set_cookie(self, name: str, value: str) -> None:
        """Set a cookie of the page's address as the master's /login sets its own (HttpOnly,
        Secure, SameSite=Strict), replacing one of that name."""
        cookie = {"name": name, "value": value, "path": "/", "secure": True}
        self.driver.add_cookie({**cookie, "httpOnly": True, "sameSite": "Strict"})

    def go(self, route: str) -> None:
        """Move to ``route`` inside the loaded page, as a link would (no reload)."""
        self.js("location.hash = arguments[0]", route)

    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def text(self, selector: str = "main") -> str:
        got = self.js(
            "const e = document.querySelector(arguments[0]); return e ? e.innerText : ''",
            selector,
        )
        return str(got)

    def wait(self, expression: str, what: str, timeout: float = WAIT, *args: Any) -> Any:
        """Poll ``expression`` (a JavaScript expression over ``arguments``) until it is truthy;
        returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(f"return ({expression});", *args)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout:g}s waiting for {what}; the page shows:\n"
                    + self.text("body")[:3000]
                )
            time.sleep(0.1)  # the page changes on its own: there is no event to await here

    def wait_text(self, selector: str, needle: str, timeout: float = WAIT) -> str:
        """Wait until the element ``selector`` shows ``needle``; returns its text."""
        self.wait(
            "(document.querySelector(arguments[0]) || {innerText: ''}).innerText"
            ".includes(arguments[1])",
            f"{needle!r} in {selector}",
            timeout,
            selector,
            needle,
        )
        return self.text(selector)

    def click(self, selector: str) -> None:
        self.js("document.querySelector(arguments[0]).click()", selector)

    def choose(self, selector: str, text: str) -> None:
        """Pick the option showing ``text`` in the <select> ``selector``, as a person would."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import Select

        Select(self.driver.find_element(By.CSS_SELECTOR, selector)).select_by_visible_text(text)

    def screenshot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.js("window.scrollTo(0, 0)")
        assert self.driver.save_screenshot(str(path)), f"no screenshot of {name}"
        assert path.stat().st_size > 10_000, f"{path} is nearly empty"
        return path

    def errors(self) -> list[str]:
        """The console's errors since the last call (the page's own, and failed loads)."""
        return [e["message"] for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]


def trusting_home(parent: Path, ca: Path) -> Path:
    """A new HOME whose NSS database (what Chromium on Linux reads) trusts ``ca`` to identify
    web sites, as ``certutil -A -t C,,`` into ``~/.pki/nssdb`` does for an operator."""
    home = Path(tempfile.mkdtemp(prefix="corral-chromium-home-", dir=parent))
    nssdb = home / ".pki" / "nssdb"
    nssdb.mkdir(parents=True)
    for args in (
        ("-N", "--empty-password"),
        ("-A", "-t", "C,,", "-n", "corral test CA", "-i", str(ca)),
    ):
        done = subprocess.run(
            [CERTUTIL, "-d", f"sql:{nssdb}", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"certutil {' '.join(args)}: {done.stderr}"
    return home


@contextmanager
def chromium(base: str, tmp: Path, ca: Path | None = None) -> Iterator[Browser]:
    """A headless Chromium on a new, empty profile, trusting the CA ``ca`` (a TLS master's:
    ``cluster.tls.ca``) and no other added one; screenshots go to $CORRAL_UI_SCREENSHOTS
    (docs/ui.md's images: CORRAL_UI_SCREENSHOTS=docs/ui) or under ``tmp``."""
    require_chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = Path(tempfile.mkdtemp(prefix="corral-chromium-", dir=tmp))
    env = dict(os.environ)
    if ca is not None:
        env["HOME"] = str(trusting_home(tmp, ca))  # Chromium inherits it from its driver
    shots = Path(os.environ.get("CORRAL_UI_SCREENSHOTS") or tmp / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER, env=env), options=options)
    try:
        driver.set_page_load_timeout(WAIT)
        yield Browser(driver, base, shots)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
        if ca is not None:
            shutil.rmtree(env["HOME"], ignore_errors=True)
