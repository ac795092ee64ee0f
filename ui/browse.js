// Folders by "/": breadcrumbs, a sortable table, a prefix filter, "load more" pages (the
// listing's `next` cursor), selection and delete, a new folder, uploads. S3 folder markers
// (the empty object `dir/` S3 tools make to keep a folder) are the folder's first row.
import { APIError, blobPath, call, formatSize, formatTime, listPage } from "./api.js";
import { askName, confirmDialog, h, notice } from "./dom.js";
import { may, mayUnder } from "./grants.js";
import { addUploads, droppedFiles } from "./uploads.js";

const PAGE = 1000;
export const folderHash = (prefix) => "#/b/" + prefix.split("/").map(encodeURIComponent).join("/");
export const objectHash = (key) => "#/o/" + key.split("/").map(encodeURIComponent).join("/");

let state = null;

export function breadcrumbs(prefix) {
  const parts = prefix.split("/").filter(Boolean);
  const items = [h("li", {}, h("a", { href: "#/" }, "Buckets"))];
  parts.forEach((part, i) => {
    const path = parts.slice(0, i + 1).join("/") + "/";
    items.push(h("li", {}, i === parts.length - 1 ? h("span", { "aria-current": "page" }, part) : h("a", { href: folderHash(path) }, part)));
  });
  return h("nav", { "aria-label": "Breadcrumbs" }, h("ol", { class: "crumbs" }, items));
}

/** A folder: `prefix` ends with "/". */
export async function showFolder(view, prefix) {
  state = { prefix, filter: "", rows: [], next: null, sort: { by: "name", up: true }, selected: new Set(), generation: 0 };
  const canUpload = mayUnder("write", prefix);
  const canDelete = mayUnder("delete", prefix);
  const fileInput = h("input", { type: "file", multiple: true, id: "file-input", class: "visually-hidden", tabindex: "-1", onchange: (e) => picked(e.target, (file) => file.name) });
  const folderInput = h("input", { type: "file", multiple: true, webkitdirectory: true, id: "folder-input", class: "visually-hidden", tabindex: "-1",
    onchange: (e) => picked(e.target, (file) => file.webkitRelativePath || file.name) });
  const tools = h("div", { class: "tools", role: "toolbar", "aria-label": "Folder actions" },
    h("label", { for: "filter" }, "Filter by prefix"),
    h("input", { id: "filter", type: "search", placeholder: "name starts with…", oninput: debounce((e) => { state.filter = e.target.value; reload(); }, 250) }),
    canUpload && [h("label", { for: "file-input", class: "button", tabindex: "0", role: "button", onkeydown: keyClick, id: "upload-files" }, "Upload files"), fileInput,
      h("label", { for: "folder-input", class: "button", tabindex: "0", role: "button", onkeydown: keyClick, id: "upload-folder" }, "Upload folder"), folderInput,
      h("button", { type: "button", id: "new-folder", onclick: newFolder }, "New folder")],
    canDelete && h("button", { type: "button", id: "delete-selected", class: "danger", disabled: true, onclick: deleteSelected }, "Delete selected"));
  const head = h("thead", {}, h("tr", {},
    h("th", { scope: "col" }, canDelete && h("input", { type: "checkbox", id: "select-all", "aria-label": "Select all", onchange: selectAll })),
    ["name", "size", "type", "modified"].map((by) => h("th", { scope: "col", "aria-sort": "none", dataset: { by } },
      h("button", { type: "button", class: "sort", onclick: () => sortBy(by) }, by[0].toUpperCase() + by.slice(1))))));
  const table = h("table", { class: "listing", "aria-label": "Folder contents" }, head, h("tbody", { id: "rows" }));
  const more = h("button", { type: "button", id: "load-more", hidden: true, onclick: loadMore }, "Load more");
  const zone = h("div", { class: "dropzone", id: "dropzone" }, canUpload ? "Drop files or folders here to upload them to " + prefix : "");
  view.replaceChildren(breadcrumbs(prefix), h("h2", {}, prefix), tools, h("p", { id: "notice" }), zone, table,
    h("p", { class: "pager" }, h("span", { id: "count" }), " ", more));
  if (canUpload) {
    for (const target of [zone, table]) {
      target.addEventListener("dragover", (e) => { e.preventDefault(); zone.classList.add("over"); });
      target.addEventListener("dragleave", () => zone.classList.remove("over"));
      target.addEventListener("drop", async (e) => { e.preventDefault(); zone.classList.remove("over"); upload(await droppedFiles(e.dataTransfer)); });
    }
  }
  await reload();
}

function keyClick(e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); e.target.click(); } }
function debounce(f, ms) { let t; return (...a) => { clearTimeout(t); t = setTimeout(() => f(...a), ms); }; }

/** The files of a picker, then the picker emptied (choosing the same file again is a change). */
function picked(input, path) {
  const files = [...input.files];
  input.value = "";
  upload(files.map((file) => ({ file, path: path(file) })));
}

function upload(files) {
  if (files.length) addUploads(files.map(({ file, path }) => ({ file, key: state.prefix + path })));
}

/** Called when an upload ends: reload if it landed in this folder. */
export function refreshIfUnder(key) {
  if (state && key.startsWith(state.prefix) && document.getElementById("rows")) reload();
}

/** Lists the folder again from its first page. Each reload is a new generation: the answer of
 * an older one (uploads ending together each reload) is dropped, so no row shows twice. */
async function reload() {
  state.generation += 1;
  state.rows = []; state.next = null; state.selected.clear();
  await loadMore();
}

async function loadMore() {
  const { prefix, filter, generation } = state;
  const more = document.getElementById("load-more");
  if (more) more.disabled = true;
  try {
    const page = await listPage(prefix + filter, state.next, PAGE);
    if (state.prefix !== prefix || state.filter !== filter || state.generation !== generation) return;  // the view moved on
    state.rows.push(...page.prefixes.map((p) => ({ folder: true, key: p, name: p.slice(prefix.length) })),
      ...page.blobs.map((b) => (b.key === prefix ? { ...b, marker: true, name: "" } : { ...b, name: b.key.slice(prefix.length) })));
    state.next = page.next;
    notice("");
  } catch (error) {
    if (state.generation !== generation) return;
    notice(error instanceof APIError && error.status === 403 ? "Your grants do not allow listing " + prefix : error.message, true);
  } finally {
    if (more) more.disabled = false;
  }
  render();
}

function sortBy(by) {
  state.sort = { by, up: state.sort.by === by ? !state.sort.up : true };
  render();
}

function compare(a, b) {
  if (Boolean(a.marker) !== Boolean(b.marker)) return a.marker ? -1 : 1;  // the folder's own marker
  if (a.folder !== b.folder) return a.folder ? -1 : 1;
  const { by, up } = state.sort;
  const key = { name: (r) => r.name, size: (r) => r.size ?? -1, type: (r) => r.content_type || "", modified: (r) => r.modified || "" }[by];
  const x = key(a), y = key(b);
  const order = x < y ? -1 : x > y ? 1 : a.name < b.name ? -1 : 1;
  return up ? order : -order;
}

function render() {
  const rows = [...state.rows].sort(compare);
  const canDelete = mayUnder("delete", state.prefix);
  document.querySelectorAll("th[data-by]").forEach((th) => th.setAttribute("aria-sort", th.dataset.by === state.sort.by ? (state.sort.up ? "ascending" : "descending") : "none"));
  document.getElementById("rows").replaceChildren(...rows.map((row) => h("tr", { dataset: { key: row.key } },
    h("td", {}, canDelete && !row.folder && may("delete", row.key) && h("input", { type: "checkbox", class: "select", "aria-label": "Select " + (row.marker ? "the folder marker " + row.key : row.name),
      checked: state.selected.has(row.key), onchange: (e) => { e.target.checked ? state.selected.add(row.key) : state.selected.delete(row.key); updateSelection(); } })),
    h("td", { class: "name" }, row.marker
      ? h("a", { href: objectHash(row.key), class: "marker", title: `The empty object ${row.key} that S3 tools make to keep a folder` }, "(folder marker)")
      : h("a", { href: row.folder ? folderHash(row.key) : objectHash(row.key), class: row.folder ? "folder" : null }, row.name)),
    h("td", { class: "num" }, row.folder ? "" : formatSize(row.size)),
    h("td", {}, row.folder ? "folder" : row.marker ? "folder marker" : row.content_type),
    h("td", {}, row.folder ? "" : formatTime(row.modified)))));
  document.getElementById("count").textContent = `${state.rows.length} ${state.rows.length === 1 ? "entry" : "entries"}${state.next ? " so far" : ""}`;
  document.getElementById("load-more").hidden = !state.next;
  updateSelection();
}

function selectAll(e) {
  document.querySelectorAll("#rows input.select").forEach((box) => { box.checked = e.target.checked; e.target.checked ? state.selected.add(box.closest("tr").dataset.key) : state.selected.delete(box.closest("tr").dataset.key); });
  updateSelection();
}

function updateSelection() {
  const button = document.getElementById("delete-selected");
  if (button) { button.disabled = state.selected.size === 0; button.textContent = state.selected.size ? `Delete selected (${state.selected.size})` : "Delete selected"; }
}

async function deleteSelected() {
  const keys = [...state.selected];
  if (!keys.length || !(await confirmDialog(keys.length === 1 ? `Delete ${keys[0]}?` : `Delete these ${keys.length} blobs?\n${keys.slice(0, 5).join("\n")}${keys.length > 5 ? "\n…" : ""}`))) return;
  const failed = [];
  for (const key of keys) {
    try { await call("DELETE", blobPath(key)); } catch (error) { failed.push(`${key}: ${error.message}`); }
  }
  await reload();
  notice(failed.length ? "Not deleted: " + failed.join("; ") : `Deleted ${keys.length}.`, failed.length > 0);
}

/** A folder exists once a key is under it: the new folder opens empty, and the first upload
 * into it makes it. (The page makes no `folder/` marker; those S3 tools make are shown.) */
async function newFolder() {
  const name = await askName({ title: "New folder", label: "Folder name", ok: "Create",
    hint: `Inside ${state.prefix}. It is kept once something is uploaded into it.`,
    check: (text) => (text.split("/").some((part) => part === "." || part === "..") ? "A folder name may not be . or .." : "") });
  const clean = name && name.replace(/^\/+|\/+$/g, "").replace(/\/{2,}/g, "/");
  if (clean) location.hash = folderHash(state.prefix + clean + "/");
}
