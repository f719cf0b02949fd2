// What services publish to the master (Operator.PublishStatus, docs/ui.md "Services"): an
// autoscaler's node groups, a job service's queues. Each service's status says who published it
// and when; one older than its ttl is marked stale (the service has not published since: it
// stopped, lost the master, or lost its grant).
import { withQuery } from "../api.js";
import { ErrorBox, Loading, useJson } from "../components.js";
import { ago, attrs, html, link, num, time } from "../lib.js";
import { useRefresh } from "../live.js";

function Published({ s }) {
  const who = s.principal ? html` by <span class="mono">${s.principal}</span>` : null;
  return html`<p class=${s.stale ? "error" : "muted"} role=${s.stale ? "alert" : undefined}>
    ${s.stale ? html`<strong>Stale:</strong> ` : null}
    published ${ago(s.published_at)}${who}${s.stale ? ` — nothing newer within its ${num(s.ttl_seconds)} s` : ""}
  </p>`;
}

// "cpus 4 · gpus 2"; with `only`, just those resources (the ones the queue has a quota of).
function amounts(map, only) {
  const entries = Object.entries(map || {}).filter(
    ([r, v]) => v !== null && v !== undefined && (!only || only.includes(r)),
  );
  return entries.length ? entries.map(([r, v]) => `${r} ${num(v)}`).join(" · ") : "–";
}

function useStatuses(kind) {
  const beat = useRefresh();
  return useJson(withQuery("/api/v1/services/status", { kind }), beat);
}

function NoneYet({ what, how }) {
  return html`<p class="muted">No service publishes its ${what} to this master. ${how}</p>`;
}

function Group({ g }) {
  const t = g.template || {};
  const backoff = g.backoff_seconds > 0 ? html`<div class="small">backing off ${num(g.backoff_seconds)} s</div>` : null;
  return html`
    <tr key=${g.name}>
      <th scope="row">${g.name}<div class="muted small">${g.provider}</div></th>
      <td>${g.min}</td>
      <td><strong>${g.nodes}</strong>${backoff}</td>
      <td>${g.max}</td>
      <td>${g.ready}</td>
      <td>${g.upcoming}</td>
      <td>${g.draining}</td>
      <td class="small">${t.resources || "–"}${t.attributes && Object.keys(t.attributes).length
        ? html`<div>${attrs(t.attributes)}</div>` : null}${(t.taints || []).length
        ? html`<div>taints: ${t.taints.join(", ")}</div>` : null}</td>
      <td>${g.priority}</td>
      <td>${num(g.price, 2)}</td>
    </tr>`;
}

function Autoscaler({ s }) {
  const d = s.document;
  const nodes = d.nodes || [];
  return html`
    <section class="service" aria-labelledby=${"svc-" + s.service}>
      <h2 id=${"svc-" + s.service}>Autoscaler <span class="mono">${s.service}</span></h2>
      <${Published} s=${s} />
      <p>${d.evaluations ?? 0} evaluations, the last in ${num(d.last_evaluation_ms ?? 0)} ms, every ${num(d.scan_interval ?? 0)} s
        ${d.last_error ? html` · <span class="error">last error: ${d.last_error}</span>` : null}</p>
      <table class="nodegroups">
        <caption>Node groups (nodes: asked of the provider and not yet deleted)</caption>
        <thead><tr><th scope="col">group</th><th scope="col">min</th><th scope="col">nodes</th>
          <th scope="col">max</th><th scope="col">ready</th><th scope="col">coming up</th>
          <th scope="col">draining</th><th scope="col">template</th><th scope="col">priority</th>
          <th scope="col">price</th></tr></thead>
        <tbody>${d.node_groups.map((g) => html`<${Group} key=${g.name} g=${g} />`)}</tbody>
      </table>
      ${nodes.length
        ? html`<table class="asnodes">
          <caption>Nodes${d.nodes_total > nodes.length ? ` (the first ${nodes.length} of ${d.nodes_total})` : ""}</caption>
          <thead><tr><th scope="col">node</th><th scope="col">group</th><th scope="col">phase</th>
            <th scope="col">agent</th><th scope="col">asked</th></tr></thead>
          <tbody>${nodes.map(
            (n) => html`<tr key=${n.name}><th scope="row" class="mono">${n.name}</th><td>${n.group}</td>
              <td>${n.phase}</td>
              <td>${n.agent_id ? html`<a class="mono" href=${link.agent(n.agent_id)}>${n.agent_id}</a>` : "–"}</td>
              <td>${ago(n.created_at)}</td></tr>`,
          )}</tbody></table>`
        : html`<p class="muted">No node asked of a provider.</p>`}
      ${(d.events || []).length
        ? html`<table class="asevents">
          <caption>Its latest events, newest first</caption>
          <thead><tr><th scope="col">at</th><th scope="col">reason</th><th scope="col">about</th><th scope="col">message</th></tr></thead>
          <tbody>${[...d.events].reverse().map(
            (e, i) => html`<tr key=${i}><td class="mono small">${time(e.at)}</td><th scope="row">${e.reason}</th>
              <td class="mono small">${e.subject}</td><td>${e.message}</td></tr>`,
          )}</tbody></table>`
        : null}
    </section>`;
}

export function NodeGroupsPage() {
  const answer = useStatuses("nodegroups");
  const statuses = answer.data ? answer.data.statuses : null;
  return html`
    <h1 tabindex="-1">Node groups</h1>
    <${ErrorBox} error=${answer.error} />
    <${Loading} state=${answer} />
    ${statuses && statuses.length === 0
      ? html`<${NoneYet} what="node groups" how="Start one with corral autoscaler --config FILE (docs/autoscaler.md)." />`
      : null}
    ${(statuses || []).map((s) => html`<${Autoscaler} key=${s.service} s=${s} />`)}`;
}

function Queue({ q, pending }) {
  const waiting = pending.filter((p) => p.cluster_queue === q.cluster_queue);
  const counted = Object.keys(q.nominal || {});
  return html`
    <tr key=${q.cluster_queue + "/" + q.flavor}>
      <th scope="row">${q.cluster_queue}<div class="muted small">${q.strategy}</div></th>
      <td>${q.flavor}</td>
      <td>${q.cohort || "–"}</td>
      <td class="small">${amounts(q.nominal)}</td>
      <td class="small">${amounts(q.used, counted)}</td>
      <td class="small">${amounts(q.borrowed, counted)}</td>
      <td class="small">${amounts(q.lent, counted)}</td>
      <td>${q.admitted_jobs}</td>
      <td>${q.pending_jobs}${waiting.length
        ? html`<ol class="small pending-jobs">${waiting.map(
            (p) => html`<li key=${p.name}><span class="mono">${p.name}</span>, waiting ${num(p.waited_seconds, 0)} s: ${p.reason}</li>`,
          )}</ol>`
        : null}</td>
    </tr>`;
}

function JobService({ s }) {
  const d = s.document;
  const locals = Object.entries(d.local_queues || {});
  return html`
    <section class="service" aria-labelledby=${"svc-" + s.service}>
      <h2 id=${"svc-" + s.service}>Job service <span class="mono">${s.service}</span></h2>
      <${Published} s=${s} />
      <table class="queues">
        <caption>Cluster queues per flavor (nominal quota; used by admitted jobs; borrowed from and lent to the cohort)</caption>
        <thead><tr><th scope="col">queue</th><th scope="col">flavor</th><th scope="col">cohort</th>
          <th scope="col">nominal</th><th scope="col">used</th><th scope="col">borrowed</th>
          <th scope="col">lent</th><th scope="col">admitted jobs</th><th scope="col">pending jobs (the head, why each waits)</th></tr></thead>
        <tbody>${d.queues.map((q) => html`<${Queue} key=${q.cluster_queue + "/" + q.flavor} q=${q} pending=${d.pending || []} />`)}</tbody>
      </table>
      ${locals.length
        ? html`<p class="small">Local queues: ${locals.map(([l, c], i) => html`${i ? ", " : ""}<span class="mono">${l}</span> → ${c}`)}</p>`
        : null}
      <p class="muted small">Admission cycle ${num(d.last_cycle_ms ?? 0, 2)} ms.</p>
    </section>`;
}

export function QueuesPage() {
  const answer = useStatuses("queues");
  const statuses = answer.data ? answer.data.statuses : null;
  return html`
    <h1 tabindex="-1">Queues</h1>
    <${ErrorBox} error=${answer.error} />
    <${Loading} state=${answer} />
    ${statuses && statuses.length === 0
      ? html`<${NoneYet} what="queues" how="Start one with corral jobs serve --queues FILE (docs/jobs.md)." />`
      : null}
    ${(statuses || []).map((s) => html`<${JobService} key=${s.service} s=${s} />`)}`;
}
