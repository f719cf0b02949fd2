// The page's toolkit: Preact with htm (JSX-like templates, no build step), hooks, and the small
// formatting helpers every page uses.
import { h, render } from "preact";
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import htm from "htm";

export const html = htm.bind(h);
export { render, useCallback, useEffect, useMemo, useRef, useState };

export const RESOURCES = ["cpus", "mem", "disk", "gpus"];
export const UNITS = { cpus: "", mem: " MB", disk: " MB", gpus: "" };

export function num(x, digits = 1) {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  if (Math.abs(x) >= 1e6) return `${(x / 1e6).toFixed(digits)}M`;
  if (Math.abs(x) >= 1e4) return `${(x / 1e3).toFixed(digits)}k`;
  return Number.isInteger(x) ? String(x) : x.toFixed(digits);
}

export function pct(part, whole) {
  return whole > 0 ? (100 * part) / whole : 0;
}

export function time(seconds) {
  if (!seconds) return "–";
  const d = new Date(seconds * 1000);
  return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

export function dateTime(seconds) {
  if (!seconds) return "–";
  return new Date(seconds * 1000).toLocaleString([], { hour12: false });
}

export function ago(seconds) {
  if (!seconds) return "–";
  const s = Math.max(0, Date.now() / 1000 - seconds);
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  return `${(s / 3600).toFixed(1)} h ago`;
}

export function attrs(map) {
  return Object.entries(map || {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
}

// Links inside the page: hash routes, so every view has an address an operator can share.
export const link = {
  cluster: () => "#/cluster",
  tasks: (query) => "#/tasks" + (query ? "?" + new URLSearchParams(query) : ""),
  task: (id, frameworkId) =>
    `#/task/${encodeURIComponent(id)}` + (frameworkId ? `?framework=${encodeURIComponent(frameworkId)}` : ""),
  agent: (id) => `#/agent/${encodeURIComponent(id)}`,
  framework: (id) => `#/framework/${encodeURIComponent(id)}`,
  events: (query) => "#/events" + (query ? "?" + new URLSearchParams(query) : ""),
  pending: () => "#/pending",
};

// Where an event's subject leads: its task, agent or framework (a demand's is its framework).
export function subjectLink(objectKind, subject) {
  if (objectKind === "task") return link.task(subject);
  if (objectKind === "agent") return link.agent(subject);
  if (objectKind === "framework") return link.framework(subject);
  if (objectKind === "demand") return link.framework(subject.split("/")[0]);
  return null;
}
