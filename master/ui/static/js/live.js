// The page's live feed: one stream (GET /api/v1/stream, Server-Sent Events) carrying the
// master's cluster events and its utilisation samples; reconnects with backoff. Pages read the
// kept samples and events, and refresh their own data on `useRefresh()`'s beat.
import { getJson, peekSpent, readEvents, takeSpent } from "./api.js";
import { useEffect, useState } from "./lib.js";

const MAX_EVENTS = 5000; // kept in the page; the master keeps its last 1000
const REFRESH_SECONDS = 5; // a page refetches its data at most this often while things change
// ... and, on a large cluster, no more often than it keeps the master busy at most 1 % of
// the time: a refresh that cost the master 80 ms waits 8 s before the next.
const COST_FACTOR = 100;

export const live = {
  status: "connecting", // connecting | live | reconnecting
  masterId: "",
  reasons: [], // every reason an event can have (corral/events.py)
  samples: [],
  sampleInterval: 5,
  events: [], // oldest first
  skipped: 0, // events the stream left out (too many at once)
  gaps: 0, // times the stream's watch was lost
  version: 0,
};

// Listeners by topic: "status" (the stream's state), "samples", "events". A page re-renders
// only for what it shows: the cluster page does not redraw for each batch of events.
const listeners = new Set();

function notify(topic) {
  live.version += 1;
  for (const entry of listeners) if (entry.topics.includes(topic)) entry.fn(live.version);
}

export function subscribe(fn, topics = ["status", "samples", "events"]) {
  const entry = { fn, topics };
  listeners.add(entry);
  return () => listeners.delete(entry);
}

function eventKey(e) {
  return `${e.timestamp}|${e.stimulus_id}|${e.kind}|${e.subject}`;
}

function addEvents(events) {
  if (!events.length) return;
  live.events = live.events.concat(events);
  if (live.events.length > MAX_EVENTS) live.events = live.events.slice(-MAX_EVENTS);
}

async function loadHistory(sinceHello, withEvents) {
  const [samples, history] = await Promise.all([
    getJson("/api/v1/cluster/samples"),
    withEvents ? getJson("/api/v1/events") : Promise.resolve(null),
  ]);
  live.sampleInterval = samples.interval;
  live.samples = samples.samples;
  if (history === null) return; // kept as they were: the events page loads them again
  const seen = new Set(history.map(eventKey));
  live.events = [];
  addEvents(history.concat(sinceHello.filter((e) => !seen.has(eventKey(e)))));
}

// The stream carries events only while a page shows them (the events page): elsewhere the
// master need not watch for the page at all.
let wantEvents = false;
let current = null; // the open stream's AbortController

export function useEventsFeed() {
  useEffect(() => {
    setWantEvents(true);
    return () => setWantEvents(false);
  }, []);
}

function setWantEvents(want) {
  if (want === wantEvents) return;
  wantEvents = want;
  if (current) current.abort(); // reconnects at once, with or without events
}

function onMessage(kind, data, state) {
  if (kind === "hello") {
    live.masterId = data.master_id;
    live.sampleInterval = data.sample_interval;
    live.reasons = data.reasons;
    notify("status");
  } else if (kind === "sample") {
    live.samples = live.samples.concat([data]).slice(-720);
    notify("samples");
  } else if (kind === "events") {
    live.skipped += data.skipped;
    if (data.lost) live.gaps += 1;
    if (state.loading) state.early.push(...data.events);
    else addEvents(data.events);
    notify("events");
  }
}

export async function startLive() {
  let backoff = 500;
  for (;;) {
    const state = { loading: true, early: [] };
    const controller = new AbortController();
    current = controller;
    const withEvents = wantEvents;
    const path = withEvents ? "/api/v1/stream" : "/api/v1/stream?events=false";
    try {
      const streaming = readEvents(path, (k, d) => onMessage(k, d, state), controller.signal);
      streaming.catch(() => {}); // awaited below; marked handled while the history loads
      await loadHistory(state.early, withEvents);
      state.loading = false;
      live.status = "live";
      backoff = 500;
      notify("status");
      notify("samples");
      notify("events");
      await streaming;
    } catch (err) {
      if (!controller.signal.aborted) console.warn("live stream:", err.message);
    }
    if (controller.signal.aborted && withEvents !== wantEvents) continue; // asked: no wait
    controller.abort();
    live.status = "reconnecting";
    notify("status");
    await new Promise((resolve) => setTimeout(resolve, backoff));
    backoff = Math.min(backoff * 2, 10000);
  }
}

// Re-render when the live feed's `topics` change. A component subscribes in an effect, which
// runs after the browser paints: the feed can change between the render and then (the stream
// went live while the page drew), and with no later change the component would go on showing
// what it rendered. So it catches up once subscribed.
export function useLive(topics) {
  const [, setVersion] = useState(live.version);
  useEffect(() => {
    const unsubscribe = subscribe(setVersion, topics);
    setVersion(live.version);
    return unsubscribe;
  }, [topics.join()]);
  return live;
}

// A counter that moves when the page should refetch: on new samples and events, but at most
// every REFRESH_SECONDS and not while the tab is hidden or the operator paused updates.
export function useRefresh(paused = false) {
  const [beat, setBeat] = useState(0);
  useEffect(() => {
    let last = Date.now();
    let pendingTimer = null;
    const fire = () => {
      pendingTimer = null;
      if (document.hidden || paused) return;
      last = Date.now();
      takeSpent();
      setBeat((b) => b + 1);
    };
    const unsubscribe = subscribe(() => {
      if (pendingTimer) return;
      const gap = Math.max(REFRESH_SECONDS, COST_FACTOR * peekSpent()) * 1000;
      pendingTimer = setTimeout(fire, Math.max(0, last + gap - Date.now()));
    }, ["samples", "events"]);
    return () => {
      unsubscribe();
      if (pendingTimer) clearTimeout(pendingTimer);
    };
  }, [paused]);
  return beat;
}
