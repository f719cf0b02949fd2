// Frameworks and roles: each framework's role, priority, dominant share, offers and tasks by
// state; each role's weight, quota (guarantee and limit) and use.
import { withQuery } from "../api.js";
import { ErrorBox, Loading, Pager, Resources, StatusBadge, useJson } from "../components.js";
import { html, link, num, useState } from "../lib.js";
import { useRefresh } from "../live.js";

function byState(counts) {
  const entries = Object.entries(counts || {}).sort(([a], [b]) => a.localeCompare(b));
  return entries.length ? entries.map(([s, n]) => `${s} ${n}`).join(" · ") : "none";
}

function Share({ value }) {
  const p = 100 * value;
  return html`<span class="share"><span class="share-bar" aria-hidden="true"><span style=${{ width: `${Math.min(100, p)}%` }}></span></span>${p.toFixed(1)}%</span>`;
}

function quotaText(quota, key) {
  const q = (quota || {})[key];
  if (!q || !Object.keys(q).length) return "none";
  return Object.entries(q).map(([r, v]) => `${r} ${num(v)}`).join(" · ");
}

export function FrameworksPage() {
  const beat = useRefresh();
  const [offset, setOffset] = useState(0);
  const [state, setState] = useState("");
  const [q, setQ] = useState("");
  const answer = useJson(withQuery("/api/v1/frameworks", { offset, limit: 50, state, q }), beat);
  const data = answer.data;
  return html`
    <h1 tabindex="-1">Frameworks and roles</h1>
    <form class="filters" onSubmit=${(e) => e.preventDefault()}>
      <label>State <select value=${state} onChange=${(e) => { setState(e.target.value); setOffset(0); }}>
        <option value="">any</option><option>subscribed</option><option>disconnected</option><option>removed</option>
      </select></label>
      <label>Search <input type="search" value=${q} placeholder="name or id" onInput=${(e) => { setQ(e.target.value); setOffset(0); }} /></label>
    </form>
    <${ErrorBox} error=${answer.error} />
    <${Loading} state=${answer} />
    ${data &&
    html`
      <table class="frameworks">
        <caption>Frameworks (dominant share: the largest fraction of any usable resource its tasks hold)</caption>
        <thead><tr><th scope="col">framework</th><th scope="col">role</th><th scope="col">state</th>
          <th scope="col">priority</th><th scope="col">dominant share</th><th scope="col">offers</th>
          <th scope="col">tasks by state</th><th scope="col">unmet demand</th></tr></thead>
        <tbody>
          ${data.items.map(
            (f) => html`
            <tr key=${f.id}>
              <th scope="row"><a href=${link.framework(f.id)}>${f.name}</a><div class="muted small mono">${f.id}</div></th>
              <td>${f.role}</td>
              <td><${StatusBadge} status=${f.state} />${f.suppressed ? html`<div class="small">suppressed</div>` : null}</td>
              <td>${f.priority}</td>
              <td><${Share} value=${f.dominant_share} /></td>
              <td>${f.offers}</td>
              <td class="small"><a href=${link.tasks({ framework_id: f.id })}>${byState(f.tasks_by_state)}</a></td>
              <td>${f.unmet ? html`<a href=${link.pending()}>${f.unmet} tasks</a>` : "none"}</td>
            </tr>`,
          )}
        </tbody>
      </table>
      <${Pager} offset=${data.offset} limit=${data.limit} total=${data.total} onChange=${setOffset} label="Frameworks" />
      <h2>Roles</h2>
      <table class="roles">
        <caption>Roles: DRF weight, quota, and what their frameworks hold and are offered</caption>
        <thead><tr><th scope="col">role</th><th scope="col">weight</th><th scope="col">guarantee</th>
          <th scope="col">limit</th><th scope="col">allocated</th><th scope="col">offered</th>
          <th scope="col">share</th><th scope="col">frameworks</th></tr></thead>
        <tbody>
          ${data.roles.map(
            (r) => html`
            <tr key=${r.role}>
              <th scope="row">${r.role}</th><td>${r.weight}</td>
              <td class="small">${quotaText(r.quota, "guarantee")}</td><td class="small">${quotaText(r.quota, "limit")}</td>
              <td class="small"><${Resources} r=${r.allocated} /></td><td class="small"><${Resources} r=${r.offered} /></td>
              <td><${Share} value=${r.share} /></td><td>${r.frameworks.length}</td>
            </tr>`,
          )}
        </tbody>
      </table>`}`;
}
