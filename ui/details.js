// One blob: its details (HEAD), a real download link, an inline preview, delete, and sharing.
// A download or preview link may not carry the long-lived token, so the page makes a read
// share link of the key (POST /v1/shares, an hour, no download limit so a player's range
// requests all work), reuses it for the tab's session and revokes it at log out.
import { APIError, blobPath, call, formatSize, formatTime } from "./api.js";
import { confirmDialog, h, notice } from "./dom.js";
import { may } from "./grants.js";
import { folderHash } from "./browse.js";
import { shareForm } from "./shares.js";
import { fileName, showVersions } from "./versions.js";

const LINKS = "blobd.links";
const LIFETIME = 3600;

function links() { try { return JSON.parse(sessionStorage.getItem(LINKS) || "{}"); } catch { return {}; } }

/** The page's own short-lived read link of `key` (made once per tab and hour). */
export async function pageLink(key) {
  const all = links();
  const known = all[key];
  if (known && known.until > Date.now() + 5 * 60 * 1000) return known;
  const share = await (await call("POST", "/v1/shares", { json: { key, allow: "read", expires_in: LIFETIME } })).json();
  const link = { id: share.id, url: new URL(share.url, location.href).pathname, until: Date.now() + LIFETIME * 1000 };
  sessionStorage.setItem(LINKS, JSON.stringify({ ...all, [key]: link }));
  return link;
}

export const pageLinkIDs = () => new Set(Object.values(links()).map((l) => l.id));

/** Revokes the page's links (at log out) with `token`, which the caller has already dropped
 * from the session: the requests are sent even if the page is left before they are answered. */
export async function revokePageLinks(token) {
  const ids = Object.values(links()).map((l) => l.id);
  sessionStorage.removeItem(LINKS);
  await Promise.allSettled(ids.map((id) => fetch("/v1/shares/" + id,
    { method: "DELETE", headers: { Authorization: "Bearer " + token }, keepalive: true, cache: "no-store" })));
}

function hex(base64) {
  try { return [...atob(base64)].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join(""); } catch { return base64; }
}

/** A key's last segment, and the folder it is in; an S3 folder marker `a/dir/` is `dir/` in `a/`. */
function splitKey(key) {
  const name = key.endsWith("/") ? key.slice(0, -1).split("/").pop() + "/" : key.split("/").pop();
  return { name, folder: key.slice(0, key.length - name.length) };
}

export async function showObject(view, key) {
  const { name, folder } = splitKey(key);
  const versions = h("section", { id: "versions" });
  const redraw = () => showObject(view, key);
  view.replaceChildren(h("nav", { "aria-label": "Breadcrumbs" }, h("a", { href: folderHash(folder) }, "← " + (folder || "Buckets"))),
    h("h2", {}, name), h("p", { id: "notice" }));
  let response;
  try { response = await call("HEAD", blobPath(key)); } catch (error) {
    notice(error.status === 404 ? "No blob at " + key : error.message, true);
    // A deleted blob of a versioned bucket keeps its versions: they can be restored.
    if (error.status === 404) {
      view.append(versions);
      const count = await showVersions(versions, key, { current: null, redraw }).catch(() => 0);
      if (count) notice("No current version: the blob was deleted. Restore one of its versions below.", true);
      else versions.remove();
    }
    return;
  }
  const header = (n) => response.headers.get(n);
  const digest = /sha-256=:([^:]+):/.exec(header("repr-digest") || "");
  const facts = [["Key", key], ["Size", `${formatSize(Number(header("content-length")))} (${header("content-length")} bytes)`],
    ["SHA-256", digest ? hex(digest[1]) : ""], ["ETag", header("etag")], ["Type", header("content-type")],
    ["Modified", formatTime(header("last-modified"))]];
  if (header("blob-version")) facts.push(["Version", header("blob-version")]);
  if (header("blob-expires-at")) facts.push(["Expires", formatTime(header("blob-expires-at"))]);
  const stored = [...response.headers].filter(([n]) => !["content-length", "etag", "content-type", "last-modified", "repr-digest", "date", "accept-ranges", "connection", "keep-alive", "blob-version"].includes(n));
  const actions = h("div", { class: "tools", role: "toolbar", "aria-label": "Blob actions" });
  const preview = h("div", { class: "preview", id: "preview", "aria-label": "Preview" });
  view.append(actions, h("dl", { class: "facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", { dataset: { fact: k } }, v || "")])),
    h("details", {}, h("summary", {}, "Stored headers"), h("dl", { class: "facts" }, stored.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]))),
    preview, versions, h("section", { id: "share-section" }));
  await addActions(actions, preview, key, fileName(key), header("content-type") || "");
  // Only a versioned bucket names the version (Blob-Version); its versions are listed.
  if (header("blob-version")) await showVersions(versions, key, { current: header("etag"), redraw }).catch((error) => notice("Versions: " + error.message, true));
  else versions.remove();
  if (may("share", key)) document.getElementById("share-section").append(shareForm({ key }));
  await showPublicURL(view, key);
}

async function addActions(actions, preview, key, name, type) {
  let link = null;
  if (may("share", key)) {
    try { link = await pageLink(key); } catch (error) { notice("No download link: " + error.message, true); }
  }
  if (link) {
    actions.append(h("a", { href: link.url, download: name, class: "button", id: "download" }, "Download"));
  } else {
    // Without `share` the page fetches with the token and saves the bytes.
    actions.append(h("button", { type: "button", id: "download", onclick: () => saveByFetch(key, name) }, "Download"));
  }
  if (may("delete", key)) {
    actions.append(h("button", { type: "button", class: "danger", id: "delete", onclick: async () => {
      if (!(await confirmDialog(`Delete ${key}?`))) return;
      try { await call("DELETE", blobPath(key)); location.hash = folderHash(splitKey(key).folder); } catch (error) { notice(error.message, true); }
    } }, "Delete"));
  }
  showPreview(preview, key, name, type, link);
}

async function saveByFetch(key, name) {
  const blob = await (await call("GET", blobPath(key))).blob();
  const url = URL.createObjectURL(blob);
  const a = h("a", { href: url, download: name });
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

async function showPreview(preview, key, name, type, link) {
  const media = type.split(";")[0].trim();
  const src = link && link.url + "?inline";
  if (src && media.startsWith("image/")) preview.append(h("img", { src, alt: "Preview of " + name, id: "preview-image" }));
  else if (src && media.startsWith("video/")) preview.append(h("video", { src, controls: true, preload: "metadata", id: "preview-media", "aria-label": "Video " + name }));
  else if (src && media.startsWith("audio/")) preview.append(h("audio", { src, controls: true, preload: "metadata", id: "preview-media", "aria-label": "Audio " + name }));
  else if (src && media === "application/pdf") preview.append(h("iframe", { src, title: "PDF " + name, class: "pdf", id: "preview-pdf" }));
  else if (media.startsWith("text/") || /json|xml|yaml|javascript/.test(media)) {
    const response = await call("GET", blobPath(key), { headers: { Range: "bytes=0-65535" } });
    const text = await response.text();
    // A 206 may hold the whole blob (a short one): "…" only when Content-Range says there is more.
    const range = /\/(\d+)$/.exec(response.headers.get("content-range") || "");
    const cut = response.status === 206 && range && Number(range[1]) > 65536;
    preview.append(h("pre", { id: "preview-text", tabindex: "0", "aria-label": "Text of " + name }, text + (cut ? "\n…" : "")));
  } else {
    preview.append(h("p", { class: "hint" }, "No preview for " + (media || "this type") + "."));
  }
}

/** The plain URL, when the blob answers a request without a credential. */
async function showPublicURL(view, key) {
  const response = await fetch(blobPath(key), { method: "HEAD", credentials: "omit", cache: "no-store" });
  if (response.ok) {
    const url = new URL(blobPath(key), location.href).href;
    view.append(h("p", { id: "public-url" }, "Public: ", h("a", { href: url }, url)));
  }
}

export { APIError };
