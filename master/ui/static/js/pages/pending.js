// Pending: every unmet demand with why it is pending, as `corral explain` gives it: per
// reason the number of agents it applies to (a few named), and for a gang how many of its
// members fit now.
import { withQuery } from "../api.js";
import { ErrorBox, Loading, Pager, useJson } from "../components.js";
import { html, link, num, useState } from "../lib.js";
import { useRefresh } from "../live.js";

function shape(resources) {
  return Object.entries(resources)
    .filter(([, v]) => v)
    .map(([k, v]) => `${k} ${num(v)}`)
    .join(" · ");
}

function Gang({ gang }) {
  if (!gang) return null;
  const fit = gang.offered
    ? `offered as bundle ${gang.offered} on ${gang.agents} agents`
    : `${gang.placeable} of ${gang.members} members fit now`;
  return html`<p class="gang"><strong>Gang:</strong> ${fit}${gang.over_headroom ? " (held back by quota headroom)" : ""}</p>`;
}

export function Demand({ d, showFramework = true }) {
  const title = `${d.name}`;
  return html`
    <article class="demand" aria-labelledby=${"d-" + d.framework_id + "-" + d.name}>
      <h2 id=${"d-" + d.framework_id + "-" + d.name}>
        Demand ${title}
        ${showFramework ? html` of <a href=${link.framework(d.framework_id)}>${d.framework_name}</a>` : null}
      </h2>
      <p>
        <strong>${d.unmet}</strong> of ${d.count} tasks unmet · ${shape(d.resources)} each ·
        priority class ${d.priority_class} (${d.priority})${d.min_member ? ` · gang of at least ${d.min_member}` : ""}
        ${d.role ? ` · role ${d.role}` : ""}
      </p>
      <p class="why"><strong>Why pending:</strong> ${d.summary}</p>
      <${Gang} gang=${d.gang} />
      <table class="reasons">
        <caption>Agents per reason (of ${d.agents} connected)</caption>
        <thead><tr><th scope="col">reason</th><th scope="col">agents</th><th scope="col">for example</th></tr></thead>
        <tbody>
          ${d.reasons.map(
            (r) => html`
            <tr key=${r.reason}>
              <th scope="row">${r.reason}</th>
              <td>${r.agents}</td>
              <td class="small">${r.sample_agents.map((a, i) => html`${i ? ", " : ""}<a href=${link.agent(a)} class="mono">${a}</a>`)}</td>
            </tr>`,
          )}
        </tbody>
      </table>
    </article>`;
}

export function PendingPage() {
  const beat = useRefresh();
  const [offset, setOffset] = useState(0);
  const answer = useJson(withQuery("/api/v1/pending", { offset, limit: 20 }), beat);
  const data = answer.data;
  return html`
    <h1 tabindex="-1">Pending</h1>
    <${ErrorBox} error=${answer.error} />
    <${Loading} state=${answer} />
    ${data &&
    html`
      <p>${data.total} demands unmet, ${data.unmet_tasks} tasks in all, highest priority first.</p>
      ${data.items.length === 0 ? html`<p class="muted">Nothing is pending: every demand is met.</p>` : null}
      ${data.items.map((d) => html`<${Demand} key=${d.framework_id + "/" + d.name} d=${d} />`)}
      <${Pager} offset=${data.offset} limit=${data.limit} total=${data.total} onChange=${setOffset} label="Demands" />`}`;
}
