// Share links: make a read or upload link of a key or prefix (expiry, download count), copy it;
// list the caller's links and revoke them.
import { call, formatTime, getJSON } from "./api.js";
import { copy, h, notice } from "./dom.js";

/** The form that makes a link of `target` ({key} or {prefix}). */
export function shareForm(target) {
  const what = target.key ?? target.prefix;
  const result = h("div", { id: "share-result", "aria-live": "polite" });
  const form = h("form", { class: "card", id: "share-form", onsubmit: async (e) => {
    e.preventDefault();
    const f = e.target.elements;
    const body = { ...target, allow: f.allow.value };
    if (f.expires.value) body.expires_in = Math.round(Number(f.expires.value) * 3600);
    if (f.downloads.value && f.allow.value === "read") body.max_downloads = Number(f.downloads.value);
    try {
      const share = await (await call("POST", "/v1/shares", { json: body })).json();
      const url = new URL(share.url, location.href).href;
      const field = h("input", { id: "share-url", readonly: true, value: url, "aria-label": "Share link", size: 60 });
      result.replaceChildren(field, h("button", { type: "button", id: "share-copy", onclick: async (ev) => {
        ev.target.textContent = (await copy(url, field)) ? "Copied" : "Selected: press Ctrl+C";
      } }, "Copy"), h("span", { class: "hint" }, share.expires ? " expires " + formatTime(share.expires) : " no expiry"));
    } catch (error) { result.replaceChildren(h("p", { class: "error", role: "alert" }, error.message)); }
  } },
  h("h3", {}, "Share " + what),
  h("label", { for: "share-allow" }, "Allow"),
  h("select", { id: "share-allow", name: "allow" }, h("option", { value: "read" }, "read (download)"), h("option", { value: "upload" }, "upload (create)")),
  h("label", { for: "share-expires" }, "Expires in (hours)"),
  h("input", { id: "share-expires", name: "expires", type: "number", min: "0.1", step: "any", value: "24" }),
  h("label", { for: "share-downloads" }, "Max downloads"),
  h("input", { id: "share-downloads", name: "downloads", type: "number", min: "1", placeholder: "no limit" }),
  h("button", { type: "submit", id: "share-create" }, "Create link"), result);
  return form;
}

/** The caller's links; `pageIDs`: the page's own download links, listed apart. */
export async function showShares(view, pageIDs) {
  view.replaceChildren(h("h2", {}, "Share links"), h("p", { id: "notice" }));
  let shares = [];
  try { shares = (await getJSON("/v1/shares")).shares; } catch (error) { notice(error.message, true); return; }
  const showOwn = h("input", { type: "checkbox", id: "show-page-links", onchange: () => render() });
  const body = h("tbody", { id: "share-rows" });
  view.append(h("p", {}, showOwn, h("label", { for: "show-page-links" }, " Also show the page's own download links")),
    h("table", { class: "listing", "aria-label": "Share links" }, h("thead", {}, h("tr", {},
      ["Key or prefix", "Allow", "Link", "Expires", "Downloads", ""].map((t) => h("th", { scope: "col" }, t)))), body));
  function render() {
    const list = shares.filter((s) => showOwn.checked || !pageIDs.has(s.id));
    body.replaceChildren(...list.map((s) => h("tr", { dataset: { id: s.id } },
      h("td", {}, s.key ?? s.prefix + "*"), h("td", {}, s.allow),
      h("td", {}, h("a", { href: s.url }, s.url)),
      h("td", {}, s.expires ? formatTime(s.expires) : "never"),
      h("td", {}, `${s.downloads}${s.max_downloads ? " / " + s.max_downloads : ""}`),
      h("td", {}, h("button", { type: "button", class: "danger", "aria-label": "Revoke link of " + (s.key ?? s.prefix), onclick: async () => {
        try {
          await call("DELETE", "/v1/shares/" + s.id);
          shares = shares.filter((x) => x.id !== s.id);
          render();
          notice("Revoked.");
        } catch (error) { notice(error.message, true); }
      } }, "Revoke")))));
    if (!list.length) body.append(h("tr", {}, h("td", { colspan: 6 }, "No share links.")));
  }
  render();
}
