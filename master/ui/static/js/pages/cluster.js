// Cluster: counts, utilisation over the last minutes, agents grouped by an attribute with
// allocated vs total per resource, and the agents themselves a page at a time.
import { withQuery } from "../api.js";
import { UtilisationCharts } from "../chart.js";
import { Bar, ErrorBox, Loading, Pager, StatusBadge, useJson } from "../components.js";
import { attrs, html, link, num, RESOURCES, useState } from "../lib.js";
import { useLive, useRefresh } from "../live.js";

function Counts({ data }) {
  const items = [
    ...data.statuses.map((s) => [html`<${StatusBadge} status=${s} />`, data.by_status[s], s]),
    ["frameworks subscribed", data.frameworks_subscribed],
    ["tasks active", data.tasks_active],
    ["offers outstanding", data.offers_outstanding],
  ];
  return html`
    <ul class="counts" aria-label="Cluster counts">
      ${items.map(([label, n, key]) => html`<li key=${key || label}><span class="count">${num(n, 0)}</span> ${label}</li>`)}
    </ul>`;
}

function Groups({ data, group, onGroup }) {
  const resources = RESOURCES.filter((r) => data.total[r] > 0);
  return html`
    <table class="groups">
      <caption>
        Agents by ${data.group_by || "nothing (one group)"}: allocated of usable (unreachable agents'
        resources left out); choose a group to list its agents
      </caption>
      <thead><tr><th scope="col">${data.group_by || "group"}</th><th scope="col">agents</th>
        ${resources.map((r) => html`<th scope="col" key=${r}>${r}</th>`)}<th scope="col">taints</th></tr></thead>
      <tbody>
        ${data.groups.map(
          (g) => html`
          <tr key=${g.key} class=${group === g.key ? "selected" : ""}>
            <th scope="row">
              <button type="button" class="linkish" aria-pressed=${group === g.key}
                onClick=${() => onGroup(group === g.key ? null : g.key)}>${g.key}</button>
            </th>
            <td>${g.agents}<br/><span class="muted small">${Object.entries(g.by_status).map(([s, n]) => `${n} ${s}`).join(", ")}</span></td>
            ${resources.map((r) => html`<td key=${r}><${Bar} used=${g.used[r]} total=${g.total[r]} resource=${r} /></td>`)}
            <td class="small">${Object.entries(g.taints).map(([t, n]) => html`<div key=${t}>${t} (${n})</div>`)}</td>
          </tr>`,
        )}
      </tbody>
    </table>
    ${data.groups_omitted ? html`<p class="muted">${data.groups_omitted} more groups not listed.</p>` : null}`;
}

function Agents({ groupBy, group, beat, statuses }) {
  // The offset belongs to the list it was chosen in: another group's list starts at its first
  // page (page 2 of all agents is not page 2 of a group of 40).
  const list = `${groupBy}\u0000${group}`;
  const [at, setAt] = useState({ list, offset: 0 });
  const offset = at.list === list ? at.offset : 0;
  const setOffset = (n) => setAt({ list, offset: n });
  const [status, setStatus] = useState("");
  const [q, setQ] = useState("");
  const [sort, setSort] = useState("id");
  const query = { offset, limit: 50, status, q, sort };
  if (group !== null && group !== undefined) Object.assign(query, { group_by: groupBy, group });
  const state = useJson(withQuery("/api/v1/agents", query), beat);
  const reset = (fn) => (e) => {
    fn(e.target.value);
    setOffset(0);
  };
  const page = state.data;
  return html`
    <section aria-labelledby="agents-h">
      <h2 id="agents-h">Agents${group !== null && group !== undefined ? ` in ${groupBy}=${group}` : ""}</h2>
      <form class="filters" onSubmit=${(e) => e.preventDefault()}>
        <label>Status <select value=${status} onChange=${reset(setStatus)}>
          <option value="">any</option>
          ${statuses.map((s) => html`<option key=${s} value=${s}>${s}</option>`)}
        </select></label>
        <label>Search <input type="search" value=${q} placeholder="id, hostname, attribute"
          onInput=${reset(setQ)} /></label>
        <label>Sort <select value=${sort} onChange=${reset(setSort)}>
          <option value="id">id</option><option value="hostname">hostname</option>
          <option value="tasks">most tasks</option><option value="cpus">most cpus allocated</option>
          <option value="mem">most mem allocated</option><option value="gpus">most gpus allocated</option>
        </select></label>
      </form>
      <${ErrorBox} error=${state.error} />
      <${Loading} state=${state} />
      ${page &&
      html`
        <table class="agents">
          <thead><tr><th scope="col">agent</th><th scope="col">status</th><th scope="col">attributes</th>
            <th scope="col">taints</th><th scope="col">cpus</th><th scope="col">mem</th><th scope="col">tasks</th></tr></thead>
          <tbody>
            ${page.items.map(
              (a) => html`
              <tr key=${a.id}>
                <th scope="row"><a href=${link.agent(a.id)}>${a.hostname}</a><div class="muted small mono">${a.id}</div></th>
                <td><${StatusBadge} status=${a.status} />
                  ${a.conditions.map((c) => html`<div class="small" key=${c}>${c}</div>`)}</td>
                <td class="small">${attrs(a.attributes)}</td>
                <td class="small">${a.taints.join(", ")}</td>
                <td><${Bar} used=${a.used.cpus} total=${a.resources.cpus} resource="cpus" /></td>
                <td><${Bar} used=${a.used.mem} total=${a.resources.mem} resource="mem" /></td>
                <td><a href=${link.tasks({ agent_id: a.id })}>${a.tasks}</a></td>
              </tr>`,
            )}
          </tbody>
        </table>
        <${Pager} offset=${page.offset} limit=${page.limit} total=${page.total} onChange=${setOffset} label="Agents" />`}
    </section>`;
}

// Only the charts re-render for each new sample.
function LiveCharts() {
  const live = useLive(["samples"]);
  return html`<${UtilisationCharts} samples=${live.samples} />`;
}

export function ClusterPage() {
  const beat = useRefresh();
  const [groupBy, setGroupBy] = useState(null);
  const [group, setGroup] = useState(null);
  const state = useJson(withQuery("/api/v1/cluster", groupBy === null ? {} : { group_by: groupBy }), beat);
  const data = state.data;
  // The agents are asked for at once, beside the counts, not once the counts are in: at 50,000
  // agents each answer takes a few hundred ms on a loaded master (issue #48).
  return html`
    <h1 tabindex="-1">Cluster</h1>
    <${ErrorBox} error=${state.error} />
    <${Loading} state=${state} />
    ${data &&
    html`
      <${Counts} data=${data} />
      <section aria-labelledby="use-h">
        <h2 id="use-h">Utilisation</h2>
        <div class="totals">
          ${RESOURCES.filter((r) => data.total[r] > 0).map(
            (r) => html`<${Bar} key=${r} label=${r} used=${data.used[r]} total=${data.total[r]} resource=${r} />`,
          )}
        </div>
        <${LiveCharts} />
      </section>
      <section aria-labelledby="groups-h">
        <h2 id="groups-h">Groups</h2>
        <label>Group agents by <select value=${data.group_by} onChange=${(e) => {
          setGroupBy(e.target.value);
          setGroup(null);
        }}>
          <option value="">nothing</option>
          ${data.attribute_keys.map((k) => html`<option key=${k} value=${k}>${k}</option>`)}
        </select></label>
        <${Groups} data=${data} group=${group} onGroup=${setGroup} />
      </section>`}
    <${Agents} groupBy=${data ? data.group_by : null} group=${group} beat=${beat}
      statuses=${data ? data.statuses : []} />`;
}
