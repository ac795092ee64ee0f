// The top level: the buckets (GET /v1/buckets, the buckets of every dialect, empty ones too),
// New bucket (PUT /v1/buckets/NAME, versioned if asked), and removing an empty bucket.
import { APIError, call, formatTime, getJSON, listPage } from "./api.js";
import { askNameWith, confirmDialog, h, notice } from "./dom.js";
import { grantBuckets, mayBucket, mayList } from "./grants.js";
import { breadcrumbs, folderHash } from "./browse.js";

const RESERVED_PREFIXES = ["xn--", "sthree-", "amzn-s3-demo-"];
const RESERVED_SUFFIXES = ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"];

/** "a", "a and b", "a, b and c". */
const spoken = (items) => (items.length < 2 ? items.join("") : items.slice(0, -1).join(", ") + " and " + items[items.length - 1]);

/** Why `name` is no bucket name (S3's rules, which blobd applies in every dialect), or "". */
export function bucketNameProblem(name) {
  const wrong = [...new Set([...name].filter((c) => !/[a-z0-9.-]/.test(c)))];
  if (wrong.length) return `Use only lowercase letters, digits, dots (.) and hyphens (-): "${name}" has ${spoken(wrong)}.`;
  if (name.length < 3 || name.length > 63) return "A bucket name is 3 to 63 characters long.";
  if (!/^[a-z0-9].*[a-z0-9]$/.test(name)) return "A bucket name starts and ends with a lowercase letter or a digit.";
  if (/\.\.|\.-|-\./.test(name)) return "A bucket name has no two dots in a row, and no dot next to a hyphen.";
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return "A bucket name may not look like an IP address.";
  if (RESERVED_PREFIXES.some((p) => name.startsWith(p)) || RESERVED_SUFFIXES.some((s) => name.endsWith(s))) {
    return `Names starting with ${spoken(RESERVED_PREFIXES)}, or ending with ${spoken(RESERVED_SUFFIXES)}, are reserved.`;
  }
  return "";
}

/** The buckets to show: GET /v1/buckets, and the top-level folders of keys that have no bucket
 * (made before buckets were shared; S3 does not see them). */
async function buckets() {
  let known;
  try { known = (await getJSON("/v1/buckets")).buckets; } catch (error) {
    const named = grantBuckets().map((name) => ({ name }));
    if (!named.length) notice(error.message, true);
    return named;
  }
  if (mayList("")) {
    try {
      const names = new Set(known.map((b) => b.name));
      for (const prefix of (await listPage("", null, 10000)).prefixes) {
        const name = prefix.slice(0, -1);
        if (!names.has(name)) known.push({ name, keysOnly: true });
      }
    } catch { /* the buckets are shown anyway */ }
  }
  return known.sort((a, b) => (a.name < b.name ? -1 : 1));
}

function settings(bucket) {
  if (bucket.keysOnly) return "keys only, no S3 bucket";
  const parts = [{ Enabled: "versioning on", Suspended: "versioning suspended" }[bucket.versioning] || "no versioning"];
  if (bucket.object_lock) parts.push("Object Lock");
  return parts.join(", ");
}

/** The top level. `message`: a notice to show once drawn (after making a bucket). */
export async function showBuckets(view, message = null) {
  const tools = h("div", { class: "tools", role: "toolbar", "aria-label": "Bucket actions" },
    mayBucket("write") && h("button", { type: "button", id: "new-bucket", onclick: () => newBucket(view) }, "New bucket"));
  view.replaceChildren(breadcrumbs(""), h("h2", {}, "Buckets"), tools, h("p", { id: "notice" }));
  const list = await buckets();
  const body = h("tbody", {}, list.map((bucket) => h("tr", { dataset: { bucket: bucket.name } },
    h("td", { class: "name" }, h("a", { href: folderHash(bucket.name + "/"), class: "folder" }, bucket.name)),
    h("td", {}, bucket.created ? formatTime(bucket.created) : ""),
    h("td", {}, settings(bucket)),
    h("td", {}, !bucket.keysOnly && mayBucket("delete", bucket.name) && h("button", { type: "button", class: "danger",
      "aria-label": "Delete bucket " + bucket.name, onclick: () => deleteBucket(view, bucket.name) }, "Delete")))));
  if (!list.length) body.append(h("tr", {}, h("td", { colspan: 4 }, "No bucket to show.")));
  view.append(h("table", { class: "listing buckets", "aria-label": "Buckets" },
    h("thead", {}, h("tr", {}, ["Name", "Created", "Settings", "Actions"].map((t) => h("th", { scope: "col" }, t)))), body),
  h("form", { class: "inline", onsubmit: (e) => {
    e.preventDefault();
    const name = e.target.elements.bucket.value.trim().replace(/\/+$/, "");
    if (name) location.hash = folderHash(name + "/");
  } }, h("label", { for: "open-bucket" }, "Open bucket or folder"), h("input", { id: "open-bucket", name: "bucket", placeholder: "photos/2024" }),
  h("button", { type: "submit" }, "Open")));
  if (message) notice(message.text, message.error);
}

async function newBucket(view) {
  const answer = await askNameWith({ title: "New bucket", label: "Bucket name", ok: "Create",
    hint: "3 to 63 lowercase letters, digits, dots and hyphens. Every dialect sees it: /v1, tus and S3.",
    option: mayBucket("admin") ? "Keep every version of each object (versioning)" : null, check: bucketNameProblem });
  if (!answer) return;
  const { name, checked } = answer;
  try {
    const response = await call("PUT", "/v1/buckets/" + encodeURIComponent(name), checked ? { json: { versioning: "Enabled" } } : {});
    const text = response.status === 201 ? `Bucket ${name} made${checked ? ", with versioning" : ""}.` : `Bucket ${name} exists already.`;
    await showBuckets(view, { text, error: false });
  } catch (error) {
    notice(`Bucket ${name} not made: ${error.message}`, true);
  }
}

async function deleteBucket(view, name) {
  if (!(await confirmDialog(`Delete the bucket ${name}? Only an empty bucket can be deleted.`))) return;
  try {
    await call("DELETE", "/v1/buckets/" + encodeURIComponent(name));
    await showBuckets(view, { text: `Bucket ${name} deleted.`, error: false });
  } catch (error) {
    notice(error instanceof APIError && error.status === 409 ? `Bucket ${name} is not empty: delete what it holds first.` : error.message, true);
  }
}
