// An object's history (the master's events about it) and a task's sandbox logs, for the
// detail pages.
import { taskLogs } from "../api.js";
import { html, link, subjectLink, time, useEffect, useState } from "../lib.js";

export function History({ events, subject }) {
  return html`
    <section aria-labelledby="history-h">
      <h2 id="history-h">History</h2>
      ${events.length === 0
        ? html`<p class="muted">No events about it in the master's log (it keeps its last 1,000).</p>`
        : html`
          <table class="history">
            <thead><tr><th scope="col">time</th><th scope="col">reason</th><th scope="col">subject</th><th scope="col">message</th></tr></thead>
            <tbody>
              ${events
                .slice()
                .reverse()
                .map((e, i) => {
                  const target = e.subject === subject ? null : subjectLink(e.object_kind, e.subject);
                  return html`
                  <tr key=${i}>
                    <td class="mono">${time(e.timestamp)}</td>
                    <td><span class=${"ev-reason reason-" + e.reason}>${e.reason}</span></td>
                    <td class="mono small">${target ? html`<a href=${target}>${e.subject}</a>` : e.subject}</td>
                    <td>${e.message}</td>
                  </tr>`;
                })}
            </tbody>
          </table>`}
      <p class="small"><a href=${link.events({ q: subject })}>All events mentioning ${subject}</a></p>
    </section>`;
}

const TAILS = [100, 500, 2000];

export function Logs({ taskId, frameworkId, live, beat }) {
  const [stream, setStream] = useState("stdout");
  const [tail, setTail] = useState(100);
  const [state, setState] = useState({ loading: true });
  useEffect(() => {
    let current = true;
    taskLogs(taskId, frameworkId, stream, tail).then(
      (got) => current && setState(got),
      (err) => current && setState({ error: err.message }),
    );
    return () => {
      current = false;
    };
  }, [taskId, frameworkId, stream, tail, live ? beat : 0]);
  let body;
  if (state.loading) body = html`<p class="muted" role="status">Loading…</p>`;
  else if (state.missing !== undefined)
    body = html`<p class="notice" role="status"><strong>Logs not available.</strong> ${state.missing}</p>`;
  else if (state.error) body = html`<p class="error" role="alert"><strong>Error:</strong> ${state.error}</p>`;
  else
    body = html`<pre class="logs" tabindex="0" aria-label=${`${stream} of task ${taskId}`}>${state.text || "(empty)"}</pre>`;
  return html`
    <section aria-labelledby="logs-h">
      <h2 id="logs-h">Sandbox logs</h2>
      <div class="filters" role="group" aria-label="Which log">
        ${["stdout", "stderr"].map(
          (s) => html`<button type="button" key=${s} aria-pressed=${stream === s} onClick=${() => setStream(s)}>${s}</button>`,
        )}
        <label>Last <select value=${tail} onChange=${(e) => setTail(Number(e.target.value))}>
          ${TAILS.map((n) => html`<option key=${n} value=${n}>${n}</option>`)}
        </select> lines</label>
      </div>
      ${body}
    </section>`;
}
