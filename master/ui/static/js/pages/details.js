// The detail pages: one task, one agent, one framework, each with its history.
import { withQuery } from "../api.js";
import { Bar, ErrorBox, Field, Loading, Resources, StatusBadge, TaskState, useJson } from "../components.js";
import { ago, attrs, dateTime, html, link, RESOURCES } from "../lib.js";
import { useRefresh } from "../live.js";
import { History, Logs } from "./history.js";
import { Demand } from "./pending.js";
import { TaskTable } from "./tasks.js";

function Task({ t, beat }) {
  return html`
    <section aria-labelledby=${"task-" + t.framework_id}>
      <h2 id=${"task-" + t.framework_id}>${t.name || t.id} <${TaskState} state=${t.state} /></h2>
      <dl class="fields">
        <${Field} name="task id"><span class="mono">${t.id}</span><//>
        <${Field} name="framework"><a href=${link.framework(t.framework_id)}>${t.framework_name || t.framework_id}</a> (role ${t.role || "–"})<//>
        <${Field} name="agent"><a href=${link.agent(t.agent_id)}>${t.hostname || t.agent_id}</a><//>
        <${Field} name="reason">${t.reason}<//>
        <${Field} name="message">${t.message || "–"}<//>
        ${t.exit_code !== null ? html`<${Field} name="exit code">${t.exit_code}<//>` : null}
        ${t.preempted_by && t.preempted_by !== t.message ? html`<${Field} name="preempted">${t.preempted_by}<//>` : null}
        <${Field} name="resources"><${Resources} r=${t.resources} /><//>
        ${t.image ? html`<${Field} name="image"><span class="mono">${t.image}</span><//>` : null}
        ${t.container_id ? html`<${Field} name="container"><span class="mono">${t.container_id}</span><//>` : null}
        <${Field} name="priority class">${t.priority_class || "(the default)"}<//>
        <${Field} name="demand">${t.demand || "–"}<//>
        <${Field} name="launched">${dateTime(t.launched_at)} (${ago(t.launched_at)})<//>
        <${Field} name="last status">${dateTime(t.updated_at)} from ${t.source.toLowerCase()}<//>
      </dl>
      <${Logs} taskId=${t.id} frameworkId=${t.framework_id} live=${!t.ended} beat=${beat} />
    </section>`;
}

export function TaskPage({ id, query }) {
  const beat = useRefresh();
  const framework = query.get("framework") || "";
  const state = useJson(withQuery(`/api/v1/tasks/${encodeURIComponent(id)}`, { framework_id: framework }), beat);
  const data = state.data;
  return html`
    <h1 tabindex="-1">Task <span class="mono">${id}</span></h1>
    <${ErrorBox} error=${state.error} />
    <${Loading} state=${state} />
    ${data && data.tasks.length > 1
      ? html`<p class="notice">${data.tasks.length} frameworks have a task with this id: each is shown.</p>`
      : null}
    ${data && data.tasks.map((t) => html`<${Task} key=${t.framework_id} t=${t} beat=${beat} />`)}
    ${data && html`<${History} events=${data.events} subject=${id} />`}`;
}

export function AgentPage({ id }) {
  const beat = useRefresh();
  const state = useJson(`/api/v1/agents/${encodeURIComponent(id)}`, beat);
  const a = state.data;
  return html`
    <h1 tabindex="-1">Agent ${a ? a.hostname : ""} <span class="mono small">${id}</span></h1>
    <${ErrorBox} error=${state.error} />
    <${Loading} state=${state} />
    ${a &&
    html`
      <dl class="fields">
        <${Field} name="status"><${StatusBadge} status=${a.status} /> ${a.conditions.join("; ")}<//>
        <${Field} name="attributes">${attrs(a.attributes) || "none"}<//>
        <${Field} name="taints">${a.taints.join(", ") || "none"}<//>
        <${Field} name="registered">${dateTime(a.registered_at)}<//>
        <${Field} name="last heard from">${dateTime(a.last_seen)} (${ago(a.last_seen)})<//>
        <${Field} name="heartbeat interval">${a.heartbeat_interval} s<//>
        <${Field} name="outstanding offers">${a.offers.length}<//>
      </dl>
      <section aria-labelledby="res-h">
        <h2 id="res-h">Resources</h2>
        ${RESOURCES.filter((r) => a.resources[r] > 0).map(
          (r) => html`<div key=${r}>
            <${Bar} label=${r + " allocated"} used=${a.used[r]} total=${a.resources[r]} resource=${r} />
            <${Bar} label=${r + " offered"} used=${a.offered[r]} total=${a.resources[r]} resource=${r} />
          </div>`,
        )}
      </section>
      <section aria-labelledby="tasks-h">
        <h2 id="tasks-h">Tasks (${a.task_list.length} live)</h2>
        <${TaskTable} tasks=${a.task_list} showAgent=${false} />
        <p class="small"><a href=${link.tasks({ agent_id: id })}>All its tasks, ended ones too</a></p>
      </section>
      <${History} events=${a.events} subject=${id} />`}`;
}

export function FrameworkPage({ id }) {
  const beat = useRefresh();
  const state = useJson(`/api/v1/frameworks/${encodeURIComponent(id)}`, beat);
  const tasks = useJson(withQuery("/api/v1/tasks", { framework_id: id, limit: 20 }), beat);
  const f = state.data;
  const why = f && f.explain;
  return html`
    <h1 tabindex="-1">Framework ${f ? f.name : ""} <span class="mono small">${id}</span></h1>
    <${ErrorBox} error=${state.error} />
    <${Loading} state=${state} />
    ${f &&
    html`
      <dl class="fields">
        <${Field} name="state"><${StatusBadge} status=${f.state} />${f.suppressed ? " (suppressed)" : ""}<//>
        <${Field} name="role">${f.role}<//>
        <${Field} name="principal">${f.principal || "–"}<//>
        <${Field} name="priority">${f.priority}<//>
        <${Field} name="dominant share">${(100 * f.dominant_share).toFixed(1)}%<//>
        <${Field} name="holds"><${Resources} r=${f.used} /><//>
        <${Field} name="offered">${f.offers} offers: <${Resources} r=${f.offered} /><//>
        <${Field} name="offer constraints">${f.offer_constraints.join(", ") || "none"}<//>
        <${Field} name="tolerations">${f.tolerations.join(", ") || "none"}<//>
        <${Field} name="registered">${dateTime(f.registered_at)}<//>
        <${Field} name="failover timeout">${f.failover_timeout ? f.failover_timeout + " s" : "the master's default"}<//>
      </dl>
      <section aria-labelledby="explain-h">
        <h2 id="explain-h">Why it is or is not offered (last cycle)</h2>
        <p>${why.outstanding_offers} offers outstanding on ${why.offered_agents} agents
          ${why.wants_nothing ? " · wants nothing (all its demands are met)" : ""}</p>
        <ul>${Object.entries(why.reasons).map(([r, n]) => html`<li key=${r}>${r}: ${n} agents</li>`)}</ul>
      </section>
      ${why.pending_demands.map(
        (d) => html`<${Demand} key=${d.name} d=${{ ...d, framework_id: f.id, framework_name: f.name }} showFramework=${false} />`,
      )}
      <section aria-labelledby="ftasks-h">
        <h2 id="ftasks-h">Latest tasks</h2>
        ${tasks.data && html`<${TaskTable} tasks=${tasks.data.items} showFramework=${false} />`}
        <p class="small"><a href=${link.tasks({ framework_id: id })}>All ${tasks.data ? tasks.data.total : ""} tasks</a></p>
      </section>
      <${History} events=${f.events} subject=${id} />`}`;
}
