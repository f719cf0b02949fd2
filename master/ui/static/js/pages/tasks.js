// Tasks: every task the master knows (live, and the ended ones it keeps), the most recently
// changed first, a page at a time; filtered by state, framework, agent and text.
import { withQuery } from "../api.js";
import { ErrorBox, Loading, Pager, Resources, TaskState, useJson } from "../components.js";
import { ago, html, link, useState } from "../lib.js";
import { useRefresh } from "../live.js";

const STATES = ["STAGING", "STARTING", "RUNNING", "KILLING", "UNREACHABLE", "FINISHED", "FAILED", "KILLED", "ERROR", "LOST", "DROPPED", "GONE"];

export function TaskTable({ tasks, showAgent = true, showFramework = true }) {
  if (!tasks.length) return html`<p class="muted">No tasks.</p>`;
  return html`
    <table class="tasks">
      <thead><tr><th scope="col">task</th><th scope="col">state</th>
        ${showFramework ? html`<th scope="col">framework</th>` : null}
        ${showAgent ? html`<th scope="col">agent</th>` : null}
        <th scope="col">resources</th><th scope="col">launched</th></tr></thead>
      <tbody>
        ${tasks.map(
          (t) => html`
          <tr key=${t.framework_id + "/" + t.id}>
            <th scope="row"><a href=${link.task(t.id, t.framework_id)} class="mono">${t.id}</a></th>
            <td><${TaskState} state=${t.state} />${t.reason && t.reason !== "UNSPECIFIED" ? html`<div class="small">${t.reason}</div>` : null}</td>
            ${showFramework ? html`<td><a href=${link.framework(t.framework_id)} class="mono small">${t.framework_id}</a></td>` : null}
            ${showAgent ? html`<td><a href=${link.agent(t.agent_id)} class="mono small">${t.agent_id}</a></td>` : null}
            <td class="small"><${Resources} r=${t.resources} /></td>
            <td class="small">${ago(t.launched_at)}</td>
          </tr>`,
        )}
      </tbody>
    </table>`;
}

export function TasksPage({ query }) {
  const beat = useRefresh();
  const [offset, setOffset] = useState(0);
  const [state, setState] = useState(query.get("state") || "");
  const [q, setQ] = useState(query.get("q") || "");
  const frameworkId = query.get("framework_id") || "";
  const agentId = query.get("agent_id") || "";
  const answer = useJson(
    withQuery("/api/v1/tasks", { offset, limit: 50, state, q, framework_id: frameworkId, agent_id: agentId }),
    beat,
  );
  const data = answer.data;
  return html`
    <h1 tabindex="-1">Tasks</h1>
    ${frameworkId ? html`<p>Of framework <a href=${link.framework(frameworkId)} class="mono">${frameworkId}</a> · <a href=${link.tasks()}>all tasks</a></p>` : null}
    ${agentId ? html`<p>On agent <a href=${link.agent(agentId)} class="mono">${agentId}</a> · <a href=${link.tasks()}>all tasks</a></p>` : null}
    <form class="filters" onSubmit=${(e) => e.preventDefault()}>
      <label>State <select value=${state} onChange=${(e) => { setState(e.target.value); setOffset(0); }}>
        <option value="">any</option>
        ${STATES.map((s) => html`<option key=${s} value=${s}>${s}</option>`)}
      </select></label>
      <label>Search <input type="search" value=${q} placeholder="task id or name" onInput=${(e) => { setQ(e.target.value); setOffset(0); }} /></label>
    </form>
    <${ErrorBox} error=${answer.error} />
    <${Loading} state=${answer} />
    ${data &&
    html`
      <${TaskTable} tasks=${data.items} />
      <${Pager} offset=${data.offset} limit=${data.limit} total=${data.total} onChange=${setOffset} label="Tasks" />`}`;
}
