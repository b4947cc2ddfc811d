// The page's client of plybot's HTTP API (/v1): plain fetch and EventSource,
// and one error type whose message is what the person is shown.

export class ApiError extends Error {
  /**
   * @param {string} message  plain words for the person
   * @param {number} status   HTTP status, or 0 when the server could not be reached
   * @param {number|null} retryAfter  seconds to wait (429, 503), when known
   */
  constructor(message, status, retryAfter = null) {
    super(message);
    this.status = status;
    this.retryAfter = retryAfter;
  }

  /** Worth retrying by itself later (rate limit, service down, network). */
  get transient() {
    return this.status === 0 || this.status === 429 || this.status === 503 || this.status >= 500;
  }
}

/**
 * The one-line message of an API error body: plybot answers
 * {"detail": ..., "message": "one line"}; plain FastAPI {"detail": "..."} or
 * {"detail": [{loc, msg}, ...]} are read too.
 */
export function detailMessage(body) {
  if (body && typeof body.message === "string" && body.message) return body.message;
  const detail = body && body.detail;
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    return detail
      .map((d) => {
        const loc = (d.loc || []).slice(1).join(".");
        return loc ? `${loc}: ${d.msg}` : d.msg;
      })
      .join("; ");
  }
  return "";
}

function retryAfterSeconds(response) {
  const value = response.headers.get("Retry-After");
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, Math.ceil(seconds));
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

async function errorFor(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: the status says enough
  }
  const detail = detailMessage(body);
  const status = response.status;
  const retryAfter = retryAfterSeconds(response);
  if (status === 429) {
    const wait = retryAfter ?? 5;
    return new ApiError("Too many requests: plybot's rate limit was reached.", status, wait);
  }
  if (status === 503) {
    return new ApiError(
      "plybot's service is unavailable right now.",
      status,
      retryAfter ?? 3,
    );
  }
  if (status === 422 || status === 400) return new ApiError(detail || "Invalid request.", status);
  if (status === 404) return new ApiError(detail || "Not found.", status);
  if (status === 409) return new ApiError(detail || "That move is not possible now.", status);
  return new ApiError(detail || `The server answered ${status}.`, status, retryAfter);
}

/** fetch + JSON; throws ApiError with a message fit to show. */
export async function request(method, path, body = undefined, { signal } = {}) {
  let response;
  try {
    response = await fetch(path, {
      method,
      signal,
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError("Cannot reach the plybot server. Is it running?", 0, 3);
  }
  if (!response.ok) throw await errorFor(response);
  return response.status === 204 ? null : response.json();
}

/**
 * Follow analysis `id`: the event stream, with polling as the fallback when the
 * stream breaks. Calls onProgress(progress) for each completed depth, then
 * onResult(analysis) once (analysis = the GET /v1/analyses/{id} body), or
 * onError(ApiError). Returns a function that stops following.
 */
export function followAnalysis(id, { onProgress, onResult, onError }) {
  let stopped = false;
  let finished = false;
  let source = null;
  const url = `/v1/analyses/${encodeURIComponent(id)}`;

  const finish = (analysis) => {
    if (stopped || finished) return;
    finished = true;
    source?.close();
    if (analysis.status === "failed") {
      onError(new ApiError(analysis.error || "The analysis failed.", 200));
    } else {
      onResult(analysis);
    }
  };

  // Polling, used when EventSource is missing or its connection drops.
  const poll = async () => {
    let delay = 500;
    while (!stopped && !finished) {
      try {
        const analysis = await request("GET", `${url}?wait=10`);
        if (analysis.progress) onProgress(analysis.progress);
        if (analysis.status === "done" || analysis.status === "failed") {
          finish(analysis);
          return;
        }
        delay = 500;
      } catch (err) {
        if (!(err instanceof ApiError) || !err.transient) {
          finished = true;
          if (!stopped) onError(err);
          return;
        }
        if (!stopped) onError(err); // shown, then retried: the page recovers by itself
        await new Promise((r) => setTimeout(r, (err.retryAfter ?? delay / 1000) * 1000));
        delay = Math.min(delay * 2, 8000);
      }
    }
  };

  // The stream's events: "progress" (data: one Progress: depth, score, exact, pv,
  // nodes, time_ms), then "done" or "failed" (data: the analysis as GET shows it).
  const handle = (event) => {
    if (stopped || finished || !event.data) return;
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return;
    }
    if (event.type === "done" || event.type === "failed") {
      finish({ id, ...data, status: data.status || event.type });
    } else if (event.type === "progress") {
      onProgress(data);
    }
  };

  if (typeof EventSource === "undefined") {
    poll();
  } else {
    source = new EventSource(`${url}/events`);
    for (const name of ["progress", "done", "failed"]) {
      source.addEventListener(name, handle);
    }
    source.onerror = () => {
      // The stream closed or broke before the result: ask for it directly.
      if (stopped || finished) return;
      source.close();
      poll();
    };
  }
  return () => {
    stopped = true;
    source?.close();
  };
}

/**
 * Cancel analysis `id` on the server (DELETE /v1/analyses/{id}) because the page no longer
 * shows it, so a worker is not kept busy for nobody. `keepalive` lets the request outlive
 * the page (it is sent from "pagehide"). Failures are ignored: at worst the job runs on.
 */
export function cancelAnalysis(id) {
  try {
    fetch(`/v1/analyses/${encodeURIComponent(id)}`, { method: "DELETE", keepalive: true }).catch(() => {});
  } catch {
    // fetch itself refused (the page is going away): nothing more to do
  }
}

/**
 * One exact analysis of `notation`, as a promise of its result (the review's building
 * block). `signal` (an AbortSignal) cancels it, on the server too. Passing failures are
 * retried after the wait the API gives.
 */
export async function analyseOnce(game, notation, { signal, mode = "solve", depth } = {}) {
  const body = { game, position: notation, moves: "all", mode };
  if (depth !== undefined) body.depth = depth;
  for (;;) {
    if (signal?.aborted) throw new DOMException("aborted", "AbortError");
    let job;
    try {
      job = await request("POST", "/v1/analyses", body, { signal });
    } catch (err) {
      if (err instanceof ApiError && err.transient) {
        await new Promise((r) => setTimeout(r, (err.retryAfter ?? 3) * 1000));
        continue;
      }
      throw err;
    }
    if (job.status === "done" && job.result) return job.result;
    const result = await new Promise((resolve, reject) => {
      // The abort listener lives only while the job does: aborting later (leaving a
      // finished review) must not send a DELETE for an analysis long done.
      const onAbort = () => {
        stop();
        cancelAnalysis(job.id);
        reject(new DOMException("aborted", "AbortError"));
      };
      const settle = (then) => (value) => {
        signal?.removeEventListener("abort", onAbort);
        then(value);
      };
      const stop = followAnalysis(job.id, {
        onProgress: () => {},
        onResult: settle((analysis) => resolve(analysis.result)),
        onError: (err) => {
          if (!(err instanceof ApiError && err.transient)) settle(reject)(err);
        },
      });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    return result;
  }
}
