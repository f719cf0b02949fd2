// Pieces every page uses. Meaning is never carried by colour alone: a status has its word and
// a symbol, a bar has its numbers written beside it.
import { getJson } from "./api.js";
import { html, num, pct, UNITS, useEffect, useRef, useState } from "./lib.js";

// Symbols the common fonts have (DejaVu Sans, Liberation): one they lack draws as an empty box,
// as ⏸ did for cordoned on a Debian host.
const STATUS_SYMBOL = {
  active: "✓",
  "under pressure": "▲",
  draining: "↓",
  drained: "↓",
  cordoned: "‖",
  disconnected: "⊘",
  recovering: "↻",
  unreachable: "✕",
  subscribed: "✓",
  removed: "✕",
};

export function StatusBadge({ status }) {
  const cls = "badge badge-" + status.replace(/\s+/g, "-");
  return html`<span class=${cls}><span aria-hidden="true">${STATUS_SYMBOL[status] || "•"} </span>${status}</span>`;
}

const TASK_CLASS = {
  RUNNING: "ok",
  FINISHED: "done",
  STAGING: "wait",
  STARTING: "wait",
  KILLING: "warn",
  UNREACHABLE: "warn",
};

export function TaskState({ state }) {
  const cls = "badge task-" + (TASK_CLASS[state] || "bad");
  return html`<span class=${cls}>${state}</span>`;
}

// Allocated of total, as a bar with its numbers: "12 / 24 cpus (50%)".
export function Bar({ used, total, label, resource }) {
  const p = pct(used, total);
  const unit = UNITS[resource] || "";
  const text = `${num(used)} / ${num(total)}${unit} (${p.toFixed(0)}%)`;
  const level = p >= 90 ? "full" : p >= 70 ? "high" : "ok";
  return html`
    <div class="bar-row">
      ${label ? html`<span class="bar-label">${label}</span>` : null}
      <div class=${"bar bar-" + level} role="meter" aria-valuemin="0" aria-valuemax=${total}
           aria-valuenow=${used} aria-valuetext=${text} aria-label=${(label || resource) + " allocated"}>
        <div class="bar-fill" style=${{ width: `${Math.min(100, p)}%` }}></div>
      </div>
      <span class="bar-text">${text}</span>
    </div>`;
}

export function ErrorBox({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert"><strong>Error:</strong> ${error.message || String(error)}</p>`;
}

// Fetch `path` (a JSON endpoint) now and whenever `beat` moves; keeps the last answer shown
// while the next one loads.
export function useJson(path, beat) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const current = useRef(path);
  useEffect(() => {
    current.current = path;
    if (!path) return undefined;
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    getJson(path, { signal: controller.signal }).then(
      (data) => current.current === path && setState({ data, error: null, loading: false }),
      (error) => {
        if (error.name !== "AbortError" && current.current === path) {
          setState((s) => ({ data: s.data, error, loading: false }));
        }
      },
    );
    return () => controller.abort();
  }, [path, beat]);
  return state;
}

// Previous / next for a page of rows: "Rows 1–100 of 10,000".
export function Pager({ offset, limit, total, onChange, label }) {
  const first = total === 0 ? 0 : offset + 1;
  const last = Math.min(offset + limit, total);
  return html`
    <nav class="pager" aria-label=${label + " pages"}>
      <button type="button" disabled=${offset === 0} onClick=${() => onChange(Math.max(0, offset - limit))}>
        ← Previous
      </button>
      <span aria-live="polite">Rows ${first}–${last} of ${total.toLocaleString()}</span>
      <button type="button" disabled=${last >= total} onClick=${() => onChange(offset + limit)}>
        Next →
      </button>
    </nav>`;
}

export function Field({ name, children }) {
  return html`<div class="field"><dt>${name}</dt><dd>${children}</dd></div>`;
}

export function Resources({ r }) {
  if (!r) return "–";
  const parts = ["cpus", "mem", "disk", "gpus"]
    .filter((k) => r[k])
    .map((k) => `${k} ${num(r[k])}`);
  if (r.ports && r.ports.length) parts.push("ports " + r.ports.map(([b, e]) => (b === e ? b : `${b}-${e}`)).join(","));
  return parts.join(" · ") || "none";
}

export function Loading({ state }) {
  if (state.data || state.error) return null;
  return html`<p class="muted" role="status">Loading…</p>`;
}
