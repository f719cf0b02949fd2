// Events: the master's cluster events, newest first, live, filtered by reason, object kind and
// text; each links to its task, agent or framework. Filters live in the address, so a filtered
// timeline can be shared (#/events?reason=Preempted).
import { html, subjectLink, time, useMemo, useState } from "../lib.js";
import { useEventsFeed, useLive } from "../live.js";
import { VirtualList } from "../virtual.js";

const KINDS = ["task", "agent", "framework", "demand", "role", "priority_class", "master"];

function setAddress(query) {
  const q = new URLSearchParams(Object.entries(query).filter(([, v]) => v));
  history.replaceState(null, "", "#/events" + (q.toString() ? "?" + q : ""));
}

function EventRow({ e }) {
  const target = subjectLink(e.object_kind, e.subject);
  return html`
    <span class="ev-time mono">${time(e.timestamp)}</span>
    <span class=${"ev-reason reason-" + e.reason}>${e.reason}</span>
    <span class="ev-kind">${e.object_kind}</span>
    <span class="ev-subject">${target ? html`<a href=${target} class="mono">${e.subject}</a>` : html`<span class="mono">${e.subject}</span>`}</span>
    <span class="ev-message" title=${e.message}>${e.message}</span>`;
}

export function EventsPage({ query }) {
  useEventsFeed();
  const live = useLive(["events", "status"]);
  const [reason, setReason] = useState(query.get("reason") || "");
  const [kind, setKind] = useState(query.get("kind") || "");
  const [text, setText] = useState(query.get("q") || "");
  const [frozen, setFrozen] = useState(null); // the events shown while paused
  const source = frozen || live.events;
  const shown = useMemo(() => {
    const needle = text.toLowerCase();
    const out = [];
    for (let i = source.length - 1; i >= 0; i -= 1) {
      const e = source[i];
      if (reason && e.reason !== reason) continue;
      if (kind && e.object_kind !== kind) continue;
      if (needle && !e.subject.toLowerCase().includes(needle) && !e.message.toLowerCase().includes(needle)) continue;
      out.push(e);
    }
    return out;
  }, [source, reason, kind, text]);
  const reasons = live.reasons.length ? live.reasons : [...new Set(source.map((e) => e.reason))].sort();
  const update = (setter, name) => (e) => {
    setter(e.target.value);
    setAddress({ reason, kind, q: text, [name]: e.target.value });
  };
  return html`
    <h1 tabindex="-1">Events</h1>
    <form class="filters" onSubmit=${(e) => e.preventDefault()} aria-label="Filter events">
      <label>Reason <select name="reason" value=${reason} onChange=${update(setReason, "reason")}>
        <option value="">any</option>
        ${reasons.map((r) => html`<option key=${r} value=${r}>${r}</option>`)}
      </select></label>
      <label>About <select name="kind" value=${kind} onChange=${update(setKind, "kind")}>
        <option value="">anything</option>
        ${KINDS.map((k) => html`<option key=${k} value=${k}>${k}</option>`)}
      </select></label>
      <label>Search <input type="search" name="q" value=${text} placeholder="subject or message"
        onInput=${update(setText, "q")} /></label>
      <button type="button" aria-pressed=${frozen !== null}
        onClick=${() => setFrozen(frozen ? null : live.events)}>
        ${frozen ? "Resume live updates" : "Pause live updates"}
      </button>
    </form>
    <p class="muted" role="status">
      ${shown.length} of ${source.length} events shown, newest first
      ${frozen ? " (paused)" : " (live)"} · the master keeps its last 1,000 events; this page keeps up to 5,000
      ${live.skipped ? ` · ${live.skipped} left out by the stream while the master was busy` : ""}
    </p>
    <div class="ev-head" aria-hidden="true"><span>time</span><span>reason</span><span>about</span><span>subject</span><span>message</span></div>
    <${VirtualList} count=${shown.length} rowHeight=${34} label="Cluster events"
      rowKey=${(i) => shown[i].timestamp + "|" + shown[i].stimulus_id + "|" + shown[i].kind + "|" + shown[i].subject + "|" + i}
      renderRow=${(i) => html`<${EventRow} e=${shown[i]} />`} />
    <p class="small muted">Also as JSON: <a href=${"/api/v1/events" + (reason ? "?reason=" + reason : "")}>/api/v1/events</a>
      · <code>corral events${reason ? " --reason " + reason : ""} --follow</code></p>`;
}

