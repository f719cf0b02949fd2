"""The web page's sign-in form (``/login``, http_auth.py) and its refusal page, in the UI's
look (its stylesheet is public: /ui/static).

Where the operator was: the page sends a browser whose token stopped working to
``/login?session=expired&next=#/ROUTE`` and the first redirect (``/`` to ``/login``) keeps
the address's fragment, which the form's script copies; signing in returns there. ``next`` is
only ever a route of the page (``#/...``), never another address: no open redirect.
"""

from __future__ import annotations

import html
import re

from aiohttp import web

# A route of the page: its hash, as app.js reads it (#/cluster, #/task/ID?framework_id=F).
_ROUTE = re.compile(r"#/[A-Za-z0-9_.~/?=&%,:+@-]{0,500}")

# Why the form is shown, by the ``session`` query parameter (only these: nothing is echoed).
ASK = (
    "<p>This page needs a token. Run <code>corral token</code> on a host that has your "
    "operator credential and paste the first line here.</p>"
)
EXPIRED = (
    '<p class="notice" role="alert">Your session has ended: the master no longer accepts '
    "this page's token (it expired, or another cluster's master issued it). Run "
    "<code>corral token</code> again and paste the new token to go back where you were.</p>"
)
UNREADABLE = (
    '<p class="error" role="alert">The form could not be read: send it from this page, or '
    "send the token as <code>Authorization: Bearer TOKEN</code> with each request.</p>"
)
SIGNED_OUT = (
    '<p class="notice" role="status">You have signed out: this browser holds no token for '
    "this master any more. Paste a token to sign in again.</p>"
)
INVALID = (
    '<p class="error" role="alert">That token is not valid: it has expired, was mistyped, or '
    "was issued by another cluster's master. Run <code>corral token</code> and paste its "
    "first line.</p>"
)

# The script keeps the route the browser arrived with (the fragment survives the redirect to
# /login), and goes straight back when the browser already holds a good cookie: a link
# followed from another site (a ticket) arrives without the SameSite=Strict cookie, which a
# request from this page does carry.
_SCRIPT = """<script>
const next = document.querySelector("input[name=next]");
if (!next.value && location.hash.startsWith("#/")) next.value = location.hash;
fetch("/", { method: "HEAD", redirect: "manual", credentials: "same-origin" })
  .then((r) => { if (r.ok) location.replace("/" + next.value); })
  .catch(() => {});
</script>"""


def route_of(text: str) -> str:
    """``text`` if it is a route of the page (``#/...``), else the empty string."""
    return text if _ROUTE.fullmatch(text) else ""


def _document(title: str, body: str) -> str:
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Corral: {title}</title>
<link rel="icon" href="/ui/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/ui/static/css/app.css">
</head>
<body>
<header><span class="brand">Corral</span></header>
<main id="main" class="login">
{body}
</main>
</body></html>
"""


def form(message: str, next_route: str, status: int = 200) -> web.Response:
    """The sign-in form under ``message`` (ASK, EXPIRED, SIGNED_OUT, INVALID, UNREADABLE), back to
    ``next_route`` (a checked route) once signed in."""
    body = f"""<h1>Sign in</h1>
{message}
<form method="post" action="/login">
<input type="hidden" name="next" value="{html.escape(route_of(next_route))}">
<p><label for="token">Token (from <code>corral token</code>)</label><br>
<input id="token" name="token" type="password" size="60" autocomplete="off" required autofocus>
<button type="submit">Sign in</button></p>
</form>
<p class="muted">A token acts as the principal it was issued to (its certificate's), with the
same permissions, for 8 hours unless <code>--ttl</code> says otherwise. The page keeps it in a
cookie for this address only. Tools can use a client certificate or
<code>Authorization: Bearer TOKEN</code> instead.</p>
{_SCRIPT}"""
    return web.Response(text=_document("sign in", body), content_type="text/html", status=status)


def refused(reason: str) -> web.Response:
    """The page (403) for a browser whose principal the ACLs do not grant the page: the
    master's reason, and the way to sign in as someone else."""
    body = f"""<h1>Not allowed</h1>
<p class="error" role="alert">{html.escape(reason)}</p>
<p><a href="/login">Sign in with another token</a>, of a principal the ACLs grant
<code>GetState</code> (docs/security.md, "ACLs").</p>"""
    return web.Response(text=_document("not allowed", body), content_type="text/html", status=403)
