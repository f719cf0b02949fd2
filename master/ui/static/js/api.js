// Every request the page makes goes through apiFetch. Its credential is the corral_token
// cookie /login set (HttpOnly: the page never sees the token), which the browser sends with
// every same-origin request, the live stream's fetch included; a plain-text master
// (--insecure) asks for none. A 401 means the credential is gone or no longer good (the token
// expired, or another cluster's master issued it): the page goes back to the login form,
// which says so and returns to the same route once signed in.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// Seconds of the master's time the page's requests cost since the last refresh (the master
// says, in X-Corral-Cost): the page spaces its refreshes by it (live.js, useRefresh).
let spent = 0;

export function takeSpent() {
  const s = spent;
  spent = 0;
  return s;
}

export function peekSpent() {
  return spent;
}

export function apiFetch(path, options = {}) {
  const headers = new Headers(options.headers || {});
  headers.set("Accept", options.accept || "application/json");
  return fetch(path, { ...options, headers, cache: "no-store", credentials: "same-origin" });
}

let signingIn = false;

// Back to /login, once however many requests were refused; returns a promise that never
// settles: the page is being replaced, and a half-drawn error would only flash before it goes.
export function signIn() {
  if (!signingIn) {
    signingIn = true;
    const query = new URLSearchParams({ session: "expired", next: location.hash });
    location.replace(`/login?${query}`);
  }
  return new Promise(() => {});
}

// GET a JSON endpoint: its body, or an ApiError with the master's reason ({"error": ...}).
export async function getJson(path, options = {}) {
  let response;
  try {
    response = await apiFetch(path, options);
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError(0, `the master did not answer (${err.message})`);
  }
  if (response.status === 401) return signIn();
  if (!response.ok) {
    let reason = `${response.status} ${response.statusText}`;
    try {
      const body = await response.json();
      if (body && body.error) reason = body.error;
    } catch (_) {
      // not JSON: the status line says enough
    }
    throw new ApiError(response.status, reason);
  }
  spent += Number(response.headers.get("X-Corral-Cost")) || 0;
  return response.json();
}

// A path with its query, leaving out empty values.
export function withQuery(path, query) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const text = q.toString();
  return text ? `${path}?${text}` : path;
}

// Read a Server-Sent Events stream through apiFetch (EventSource cannot carry a header), calling
// onMessage(kind, data) per message, until signal aborts. Returns when the stream ends.
export async function readEvents(path, onMessage, signal) {
  const response = await apiFetch(path, { signal, accept: "text/event-stream" });
  if (response.status === 401) return signIn();
  if (!response.ok || !response.body) {
    throw new ApiError(response.status, `the stream answered ${response.status}`);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let kind = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) kind = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length) onMessage(kind, JSON.parse(data.join("\n")));
    }
  }
}

// The last lines of a task's sandbox file ("stdout" or "stderr"), read by the master from the
// task's agent: GET /api/v1/tasks/{id}/files/{path}?framework_id=F&tail=N (the endpoint
// `corral logs` uses). {text}, or {missing: reason} when the master cannot give it: the
// sandbox is gone or not made yet, the agent is simulated or not connected (the master's
// reason), or this master has no such endpoint.
export async function taskLogs(taskId, frameworkId, stream, tail) {
  const path = withQuery(
    `/api/v1/tasks/${encodeURIComponent(taskId)}/files/${encodeURIComponent(stream)}`,
    { framework_id: frameworkId, tail },
  );
  const response = await apiFetch(path, { accept: "application/octet-stream" });
  if (response.ok) return { text: await response.text() };
  if (response.status === 401) return signIn();
  let reason = null;
  try {
    const body = await response.json();
    if (body && body.error) reason = body.error;
  } catch (_) {
    // not the master's JSON refusal: a master without the endpoint answers a plain 404
  }
  if (reason === null && response.status === 404) {
    reason = "this master does not serve task files (GET /api/v1/tasks/{id}/files/{path})";
  }
  return { missing: reason || `${response.status} ${response.statusText}` };
}
