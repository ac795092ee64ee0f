// Admin pages (admin:*): keys (list, create with grants, the secrets shown once, revoke), and
// per bucket its public prefixes and its CORS, lifecycle and notification settings as JSON.
import { APIError, call, formatTime, getJSON, listPage } from "./api.js";
import { confirmDialog, h, notice } from "./dom.js";

export async function showKeys(view) {
  view.replaceChildren(h("h2", {}, "Keys"), h("p", { id: "notice" }));
  const secret = h("div", { id: "new-key", "aria-live": "polite" });
  const form = h("form", { class: "card", id: "key-form", onsubmit: async (e) => {
    e.preventDefault();
    const f = e.target.elements;
    const body = { name: f.name.value.trim(), grants: f.grants.value.split(/[\s,]+/).filter(Boolean) };
    if (f.expires.value) body.expires_in = Math.round(Number(f.expires.value) * 86400);
    try {
      const key = await (await call("POST", "/v1/admin/keys", { json: body })).json();
      secret.replaceChildren(h("p", { class: "warn" }, "Copy these now: they are shown only once."),
        h("dl", { class: "facts" }, [["Token", key.token, "new-token"], ["S3 access key id", key.access_key_id, "new-access-key"],
          ["S3 secret", key.secret_access_key, "new-secret"]].map(([k, v, id]) => [h("dt", {}, k), h("dd", {}, h("code", { id }, v))])));
      form.reset();
      await table();
    } catch (error) { notice(error.message, true); }
  } },
  h("h3", {}, "New key"),
  h("label", { for: "key-name" }, "Name"), h("input", { id: "key-name", name: "name", required: true }),
  h("label", { for: "key-grants" }, "Grants (one per line: read:photos, write:photos/inbox*, admin:*)"),
  h("textarea", { id: "key-grants", name: "grants", rows: 3, required: true }),
  h("label", { for: "key-expires" }, "Expires in (days, empty for never)"), h("input", { id: "key-expires", name: "expires", type: "number", min: "0.01", step: "any" }),
  h("button", { type: "submit", id: "key-create" }, "Create key"));
  const rows = h("tbody", { id: "key-rows" });
  view.append(form, secret, h("table", { class: "listing", "aria-label": "Keys" }, h("thead", {}, h("tr", {},
    ["Id", "Name", "Grants", "Created", "Expires", ""].map((t) => h("th", { scope: "col" }, t)))), rows));
  async function table() {
    let keys = [];
    try { keys = (await getJSON("/v1/admin/keys")).keys; } catch (error) { notice(error.message, true); return; }
    rows.replaceChildren(...keys.map((k) => h("tr", { dataset: { id: k.id } }, h("td", {}, h("code", {}, k.id)), h("td", {}, k.name ?? ""),
      h("td", {}, (k.grants || []).join(", ")), h("td", {}, formatTime(k.created)), h("td", {}, k.expires ? formatTime(k.expires) : "never"),
      h("td", {}, k.read_only || k.source === "tokens-file" ? "tokens file" : h("button", { type: "button", class: "danger", "aria-label": "Revoke key " + (k.name ?? k.id), onclick: async () => {
        if (!(await confirmDialog(`Revoke key ${k.name ?? k.id}? Requests with it get 401 at once.`, "Revoke"))) return;
        try { await call("DELETE", "/v1/admin/keys/" + encodeURIComponent(k.id)); await table(); } catch (error) { notice(error.message, true); }
      } }, "Revoke")))));
  }
  await table();
}

const SETTINGS = [
  ["cors", "CORS rules", '{"rules": [{"allowed_origins": ["https://app.example"], "allowed_methods": ["GET", "PUT"], "allowed_headers": ["*"], "max_age_seconds": 600}]}'],
  ["lifecycle", "Lifecycle rules", '{"rules": [{"id": "logs-30d", "status": "Enabled", "prefix": "logs/", "expiration_days": 30}]}'],
  ["notifications", "Notifications", '{"subscriptions": [{"id": "thumbs", "target": "NAME", "events": ["s3:ObjectCreated:*"], "prefix": "images/"}]}'],
];

export async function showBucketSettings(view, bucket) {
  view.replaceChildren(h("h2", {}, "Bucket settings"), h("p", { id: "notice" }));
  let names = [];
  try { names = (await listPage("", null, 10000)).prefixes.map((p) => p.slice(0, -1)); } catch { /* name it by hand */ }
  const pick = h("form", { class: "inline", onsubmit: (e) => { e.preventDefault(); location.hash = "#/admin/buckets/" + encodeURIComponent(e.target.elements.bucket.value.trim()); } },
    h("label", { for: "settings-bucket" }, "Bucket"), h("input", { id: "settings-bucket", name: "bucket", list: "bucket-names", value: bucket || "", required: true }),
    h("datalist", { id: "bucket-names" }, names.map((n) => h("option", { value: n }))), h("button", { type: "submit" }, "Open"));
  view.append(pick);
  if (!bucket) return;
  view.append(await publicForm(bucket), ...SETTINGS.map(([name, title, example]) => settingForm(bucket, name, title, example)));
}

async function publicForm(bucket) {
  const path = `/v1/admin/buckets/${encodeURIComponent(bucket)}/public`;
  const area = h("textarea", { id: "public-prefixes", rows: 3, "aria-describedby": "public-help" });
  const status = h("p", { class: "hint", "aria-live": "polite" });
  const show = (prefixes) => { area.value = prefixes.map((p) => p || "*").join("\n"); };
  try { show((await getJSON(path)).prefixes); } catch (error) { status.textContent = error.message; }
  return h("form", { class: "card", id: "public-form", onsubmit: async (e) => {
    e.preventDefault();
    const prefixes = area.value.split("\n").map((s) => s.trim()).filter(Boolean).map((s) => (s === "*" ? "" : s));
    try {
      const saved = await (await call("PUT", path, { json: { prefixes } })).json();
      show(saved.prefixes);
      status.textContent = saved.prefixes.length ? "Saved: anyone may read " + saved.prefixes.map((p) => bucket + "/" + p + "*").join(", ") : "Saved: nothing public.";
    } catch (error) { status.textContent = error.message; }
  } }, h("h3", {}, "Public prefixes"),
  h("label", { for: "public-prefixes" }, "Prefixes anyone may read and list, one per line"),
  h("p", { id: "public-help", class: "hint" }, "* is the whole bucket; an empty box makes nothing public. Saving replaces the bucket's policy."),
  area, h("button", { type: "submit", id: "public-save" }, "Save"), status);
}

function settingForm(bucket, name, title, example) {
  const path = `/v1/admin/buckets/${encodeURIComponent(bucket)}/${name}`;
  const area = h("textarea", { id: `setting-${name}`, rows: 6, placeholder: example, spellcheck: false });
  const status = h("p", { class: "hint", "aria-live": "polite", id: `setting-${name}-status` });
  const form = h("form", { class: "card", onsubmit: async (e) => {
    e.preventDefault();
    let json;
    try { json = JSON.parse(area.value); } catch (error) { status.textContent = "Not JSON: " + error.message; return; }
    try { area.value = JSON.stringify(await (await call("PUT", path, { json })).json(), null, 2); status.textContent = "Saved."; } catch (error) { status.textContent = explain(error); }
  } }, h("h3", {}, title), h("label", { for: `setting-${name}` }, `${title} of ${bucket} (JSON)`), area,
  h("button", { type: "submit" }, "Save"),
  h("button", { type: "button", class: "danger", onclick: async () => {
    try { await call("DELETE", path); area.value = ""; status.textContent = "Removed."; } catch (error) { status.textContent = explain(error); }
  } }, "Remove"), status);
  getJSON(path).then((value) => { area.value = JSON.stringify(value, null, 2); status.textContent = "Loaded."; },
    (error) => { status.textContent = explain(error); });
  return form;
}

function explain(error) {
  if (error instanceof APIError && error.noRoute) return "This blobd has no such setting yet.";
  if (error instanceof APIError && error.status === 404) return "Not set.";
  return error.message;
}
