// A blob's versions (GET /v1/blobs/K?versions, newest first, in pages): download one
// (?version=ID), restore one, delete one for good (DELETE ?version=ID).
// /v1 has no copy of a version onto its key (S3's CopyObject of ?versionId is the other way), so
// the page restores by GETting the version and PUTting its bytes back with its type and stored
// headers: a new current version, every other version kept. The PUT is conditional (If-Match the
// current version's ETag, If-None-Match: * when there is none), so a change made meanwhile is
// never overwritten. The browser decodes a stored Content-Encoding, so the copy holds the decoded
// bytes without it. The bytes pass through the tab's memory.
import { blobPath, call, formatSize, formatTime } from "./api.js";
import { confirmDialog, h, notice } from "./dom.js";
import { may } from "./grants.js";

const PAGE = 100;
/** The stored headers a restored copy takes from its version (Blob-Meta-* too). */
const KEPT = ["content-type", "cache-control", "content-disposition", "content-language", "expires"];

/** The file name a download of `key` gets (`dir/` gives `dir`). */
export const fileName = (key) => key.replace(/\/+$/, "").split("/").pop() || "blob";

const versionPath = (key, id) => blobPath(key) + "?version=" + encodeURIComponent(id);

/** Draws the versions of `key` into `section`. `current`: the current version's ETag (null
 * when the blob was deleted); `redraw()` draws the blob's view again, after a change. Resolves
 * the number of versions listed. */
export async function showVersions(section, key, { current, redraw }) {
  const body = h("tbody", { id: "version-rows" });
  const more = h("button", { type: "button", id: "versions-more", hidden: true }, "More versions");
  section.replaceChildren(h("h3", { id: "versions-title" }, "Versions"),
    h("table", { class: "listing", "aria-labelledby": "versions-title" }, h("thead", {}, h("tr", {},
      ["Version", "Modified", "Size", "SHA-256", "State", "Actions"].map((t) => h("th", { scope: "col" }, t)))), body), more);
  const context = { key, current, redraw, body };
  let next = null, count = 0;
  const page = async () => {
    const query = new URLSearchParams({ limit: String(PAGE) });
    if (next) query.set("after", next);
    const answer = await (await call("GET", blobPath(key) + "?versions&" + query)).json();
    for (const version of answer.versions) body.append(versionRow(context, version));
    count += answer.versions.length;
    next = answer.next;
    more.hidden = !next;
  };
  more.addEventListener("click", () => page().catch((error) => notice(error.message, true)));
  await page();
  return count;
}

function versionRow(context, version) {
  const { key } = context;
  const id = version.version;
  const state = version.delete_marker ? "delete marker" + (version.latest ? " (latest)" : "") : version.latest ? "latest" : "";
  const actions = h("td", { class: "actions" });
  if (!version.delete_marker) {
    actions.append(h("button", { type: "button", class: "download", "aria-label": `Download version ${id}`, onclick: () => download(key, id) }, "Download"));
    if (!version.latest && may("write", key)) {
      actions.append(" ", h("button", { type: "button", class: "restore", "aria-label": `Restore version ${id}`, onclick: () => restore(context, id) }, "Restore"));
    }
  }
  if (may("delete", key)) {
    actions.append(" ", h("button", { type: "button", class: "danger delete-version", "aria-label": `Delete version ${id} for good`,
      onclick: () => deleteVersion(context, version) }, "Delete"));
  }
  return h("tr", { dataset: { version: id } },
    h("td", {}, h("code", {}, id)),
    h("td", {}, formatTime(version.modified)),
    h("td", { class: "num" }, version.delete_marker ? "" : formatSize(version.size)),
    h("td", {}, version.sha256 ? h("code", { title: version.sha256 }, version.sha256.slice(0, 12) + "…") : ""),
    h("td", {}, state), actions);
}

async function download(key, id) {
  try {
    const blob = await (await call("GET", versionPath(key, id))).blob();
    const url = URL.createObjectURL(blob);
    const a = h("a", { href: url, download: fileName(key) });
    document.body.append(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  } catch (error) { notice(`Version ${id} not downloaded: ${error.message}`, true); }
}

async function restore({ key, current, redraw }, id) {
  if (!(await confirmDialog(`Restore version ${id} of ${key}?\nIts bytes become the current version; every version stays.`, "Restore"))) return;
  try {
    const got = await call("GET", versionPath(key, id));
    const headers = {};
    for (const [name, value] of got.headers) if (KEPT.includes(name) || name.startsWith("blob-meta-")) headers[name] = value;
    if (current) headers["If-Match"] = current; else headers["If-None-Match"] = "*";
    await call("PUT", blobPath(key), { body: await got.blob(), headers });
    await redraw();
    notice(`Restored version ${id} as the current version.`);
  } catch (error) {
    notice(error.status === 412 ? `Not restored: ${key} changed meanwhile. Look again, then restore.` : `Not restored: ${error.message}`, true);
  }
}

async function deleteVersion({ key, redraw }, version) {
  const what = version.delete_marker ? `the delete marker ${version.version}` : `version ${version.version}`;
  if (!(await confirmDialog(`Delete ${what} of ${key} for good?${version.delete_marker && version.latest ? "\nThe version before it becomes current again." : ""}`))) return;
  try {
    await call("DELETE", versionPath(key, version.version));
    await redraw();
    notice(`Deleted ${what}.`);
  } catch (error) { notice(`Not deleted: ${error.message}`, true); }
}
