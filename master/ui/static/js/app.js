// The page: a header with the sections, the live feed's state, and the section the address
// names (hash routes: #/cluster, #/task/ID, ...). Moving to a section moves the keyboard focus
// to its heading, so a screen reader announces it and Tab continues from there.
import { getJson } from "./api.js";
import { html, render, useEffect, useRef, useState } from "./lib.js";
import { startLive, useLive } from "./live.js";
import { ClusterPage } from "./pages/cluster.js";
import { AgentPage, FrameworkPage, TaskPage } from "./pages/details.js";
import { EventsPage } from "./pages/events.js";
import { FrameworksPage } from "./pages/frameworks.js";
import { PendingPage } from "./pages/pending.js";
import { NodeGroupsPage, QueuesPage } from "./pages/services.js";
import { TasksPage } from "./pages/tasks.js";

const SECTIONS = [
  ["cluster", "Cluster"],
  ["frameworks", "Frameworks and roles"],
  ["tasks", "Tasks"],
  ["pending", "Pending"],
  ["events", "Events"],
  ["nodegroups", "Node groups"],
  ["queues", "Queues"],
];

function parse(hash) {
  const text = hash.replace(/^#\/?/, "") || "cluster";
  const [path, search] = text.split("?");
  const parts = path.split("/").map(decodeURIComponent);
  return { name: parts[0], id: parts.slice(1).join("/"), query: new URLSearchParams(search || "") };
}

function useRoute() {
  const [route, setRoute] = useState(parse(location.hash));
  useEffect(() => {
    const changed = () => setRoute(parse(location.hash));
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return route;
}

function Page({ route }) {
  switch (route.name) {
    case "cluster":
      return html`<${ClusterPage} />`;
    case "frameworks":
      return html`<${FrameworksPage} />`;
    case "tasks":
      return html`<${TasksPage} query=${route.query} key=${route.query.toString()} />`;
    case "pending":
      return html`<${PendingPage} />`;
    case "events":
      return html`<${EventsPage} query=${route.query} />`;
    case "nodegroups":
      return html`<${NodeGroupsPage} />`;
    case "queues":
      return html`<${QueuesPage} />`;
    case "task":
      return html`<${TaskPage} id=${route.id} query=${route.query} key=${route.id + "?" + route.query} />`;
    case "agent":
      return html`<${AgentPage} id=${route.id} key=${route.id} />`;
    case "framework":
      return html`<${FrameworkPage} id=${route.id} key=${route.id} />`;
    default:
      return html`<h1 tabindex="-1">Not found</h1><p>No section “${route.name}”. <a href="#/cluster">Go to the cluster</a>.</p>`;
  }
}

function LiveState() {
  const live = useLive(["status"]);
  const words = { connecting: "connecting…", live: "live", reconnecting: "reconnecting…" };
  return html`<span class=${"live live-" + live.status} role="status">
    <span aria-hidden="true">${live.status === "live" ? "●" : "○"} </span>${words[live.status]}
    ${live.masterId ? html` · master <span class="mono">${live.masterId}</span>` : null}
  </span>`;
}

// Signed in with the page's cookie: who, and a way out (the cookie is HttpOnly, so the master
// says whether the page holds one).
function Account() {
  const [me, setMe] = useState(null);
  useEffect(() => {
    getJson("/api/v1/whoami").then(setMe, () => setMe(null));
  }, []);
  if (!me || !me.session) return null;
  return html`<form class="account" method="post" action="/logout">
      <span>Signed in as <strong>${me.principal}</strong></span>
      <button type="submit">Sign out</button></form>`;
}

function App() {
  const route = useRoute();
  const section = { task: "tasks", agent: "cluster", framework: "frameworks" }[route.name] || route.name;
  const first = useRef(true);
  useEffect(() => {
    const heading = document.querySelector("main h1");
    if (heading && !first.current) heading.focus();
    first.current = false;
    document.title = `${heading ? heading.textContent.trim() : "Corral"} · Corral`;
  }, [route.name, route.id]);
  return html`
    <a class="skip" href="#main" onClick=${(e) => {
      e.preventDefault();
      document.getElementById("main").focus();
    }}>Skip to content</a>
    <header>
      <span class="brand">Corral</span>
      <nav aria-label="Sections">
        <ul>
          ${SECTIONS.map(
            ([name, label]) => html`<li key=${name}>
              <a href=${"#/" + name} aria-current=${section === name ? "page" : undefined}>${label}</a></li>`,
          )}
        </ul>
      </nav>
      <${LiveState} />
      <${Account} />
    </header>
    <main id="main" tabindex="-1"><${Page} route=${route} /></main>`;
}

render(html`<${App} />`, document.getElementById("app"));
startLive();
