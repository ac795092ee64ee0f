// The /v1 API as the page calls it: every call carries the bearer token kept for the tab.
const TOKEN = "blobd.token";

export function token() { return sessionStorage.getItem(TOKEN); }
export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN, value); else sessionStorage.removeItem(TOKEN);
}

/** An answer that is not 2xx: its status and problem+json detail. */
export class APIError extends Error {
  constructor(status, problem) {
    super(problem && (problem.detail || problem.title) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
  /** A 404 because the route does not exist in this blobd (not a missing thing). */
  get noRoute() { return this.status === 404 && /no resource at this path/i.test(this.problem.detail || ""); }
}

export function authHeaders(extra = {}) {
  const t = token();
  return t ? { Authorization: "Bearer " + t, ...extra } : { ...extra };
}

/** fetch with the token; throws APIError unless the status is 2xx (or 304). */
export async function call(method, path, { body, headers = {}, json } = {}) {
  const init = { method, headers: authHeaders(headers), cache: "no-store" };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers["Content-Type"] = "application/json";
  } else if (body !== undefined) {
    init.body = body;
  }
  const response = await fetch(path, init);
  if (!response.ok && response.status !== 304) {
    let problem = null;
    try { problem = await response.json(); } catch { /* not JSON */ }
    throw new APIError(response.status, problem);
  }
  return response;
}

export async function getJSON(path) { return (await call("GET", path)).json(); }

/** A key's path under /v1/blobs/: each segment percent-encoded, slashes kept, but for a slash
 * next to an empty segment (an S3 folder marker `dir/`, `a//b`), which travels as %2F: a path
 * with an empty segment names a folder's listing, or is refused. */
export function blobPath(key) {
  const parts = key.split("/").map(encodeURIComponent);
  let path = parts[0];
  for (let i = 1; i < parts.length; i++) path += (parts[i - 1] === "" || parts[i] === "" ? "%2F" : "/") + parts[i];
  return "/v1/blobs/" + path;
}

/** One page of a folder: {blobs, prefixes, next}. */
export function listPage(prefix, after, limit = 1000) {
  const q = new URLSearchParams({ prefix, delimiter: "/", limit: String(limit) });
  if (after) q.set("after", after);
  return getJSON("/v1/blobs?" + q);
}

export function whoami() { return getJSON("/v1/whoami"); }

export function formatSize(n) {
  if (n == null) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0, v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i === 0 ? String(v) : v.toFixed(v < 10 ? 1 : 0)) + " " + units[i];
}

export function formatTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString();
}
