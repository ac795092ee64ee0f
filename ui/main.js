// The page: log in, the caller's grants, the status line, and the views by location hash:
// #/ buckets, #/b/PREFIX/ a folder, #/o/KEY a blob, #/shares, #/admin/keys, #/admin/buckets/B.
import { APIError, setToken, token, whoami } from "./api.js";
import { h } from "./dom.js";
import { isAdminEverywhere, setGrants } from "./grants.js";
import { refreshIfUnder, showFolder } from "./browse.js";
import { showBuckets } from "./buckets.js";
import { pageLinkIDs, revokePageLinks, showObject } from "./details.js";
import { showShares } from "./shares.js";
import { showBucketSettings, showKeys } from "./admin.js";
import { clearFinished, whenFinished } from "./uploads.js";

const view = document.getElementById("view");
const decode = (path) => path.split("/").map(decodeURIComponent).join("/");

async function status() {
  const line = document.getElementById("status");
  const parts = [];
  try {
    const about = await (await fetch("/ui/about.json", { cache: "no-store" })).json();
    parts.push("blobd " + about.version, "node " + (about.node ?? "single"));
  } catch { parts.push("blobd"); }
  try {
    const ready = await fetch("/readyz", { cache: "no-store" });
    parts.push(ready.ok ? "ready" : "not ready (" + ready.status + ")");
  } catch { parts.push("unreachable"); }
  line.textContent = parts.join(" · ");
  line.dataset.ready = String(parts.includes("ready"));
}

/** Who the page acts as: null before logging in, else whether it has no token (`anonymous`)
 * and whether access is open (no tokens file: every caller may do everything). */
let session = null;

/** Open access: a caller without a token holds every action on everything. */
const isOpen = (me) => me.principal === "anonymous" && ["read", "write", "delete", "share", "admin"].every((a) => me.grants.includes(a + ":*"));

function showLogin(message = "") {
  session = null;
  document.getElementById("login-view").hidden = false;
  for (const id of ["nav", "who", "grants"]) document.getElementById(id).hidden = true;
  view.replaceChildren();
  document.getElementById("login-error").textContent = message;
  document.getElementById("token").focus();
}

/** Shows the page as `me` (GET /v1/whoami's answer). */
function enter(me, { open = false } = {}) {
  session = { anonymous: me.principal === "anonymous", open };
  setGrants(me.grants);
  document.getElementById("principal").textContent = me.principal;
  document.getElementById("grants").replaceChildren(...me.grants.map((g) => h("li", {}, h("code", {}, g))));
  document.getElementById("login-view").hidden = true;
  document.getElementById("nav").hidden = false;
  document.getElementById("who").hidden = false;
  document.getElementById("open-access").hidden = !open;
  // Open access has nothing to log out of; a caller without a token may log in with one.
  const logout = document.getElementById("logout");
  logout.hidden = open;
  logout.textContent = session.anonymous ? "Log in" : "Log out";
  document.getElementById("nav-keys").hidden = !isAdminEverywhere();
  document.getElementById("nav-buckets").hidden = !me.grants.some((g) => g.startsWith("admin"));
}

/** Logs in with the tab's token; without one (or with one refused), in open access the page
 * goes on without a token, else it shows the log in, offering to go on without a token when
 * callers without one hold some grant (`--public-read`, `anonymous` lines). */
async function login() {
  let refused = "";
  if (token()) {
    try { enter(await whoami()); return true; } catch (error) {
      setToken(null);
      refused = error instanceof APIError && error.status === 401 ? "That token is not valid." : error.message;
    }
  }
  let anonymous = null;
  try { anonymous = await whoami(); } catch (error) { refused ||= error.message; }
  if (anonymous && isOpen(anonymous)) { enter(anonymous, { open: true }); return true; }
  const some = anonymous && anonymous.grants.length > 0;
  document.getElementById("anonymous").hidden = !some;
  document.getElementById("anonymous-grants").replaceChildren(...(some ? anonymous.grants.map((g, i) => [i ? ", " : "", h("code", {}, g)]).flat() : []));
  document.getElementById("anonymous-continue").onclick = () => { enter(anonymous); route(true); };
  showLogin(refused);
  return false;
}

/** Draws the view the location hash names. `moved`: the user went there (a link, a key, the
 * log in), so when the focus was lost with the old view it goes to the new view's heading. */
async function route(moved = false) {
  if (!session) { showLogin(document.getElementById("login-error").textContent); return; }
  const hash = location.hash || "#/";
  document.querySelectorAll("#nav a").forEach((a) => a.toggleAttribute("aria-current", hash.startsWith(a.getAttribute("href")) && a.getAttribute("href") !== "#/" || (a.getAttribute("href") === "#/" && /^#\/(b\/|o\/)?/.test(hash) && !/^#\/(shares|admin)/.test(hash))));
  // Each view draws into a pane of its own: one still loading when the user moves on draws
  // into a pane that is no longer shown.
  const pane = h("div");
  view.replaceChildren(pane);
  await draw(pane, hash);
  const focus = document.activeElement;
  if (moved && pane.isConnected && (!focus || focus === document.body || !focus.isConnected || !focus.getClientRects().length)) {
    const heading = pane.querySelector("h2");
    if (heading) { heading.tabIndex = -1; heading.focus({ preventScroll: true }); }
  }
}

function draw(pane, hash) {
  if (hash.startsWith("#/b/")) return showFolder(pane, decode(hash.slice(4)));
  if (hash.startsWith("#/o/")) return showObject(pane, decode(hash.slice(4)));
  if (hash === "#/shares") return showShares(pane, pageLinkIDs());
  if (hash === "#/admin/keys") return showKeys(pane);
  if (hash.startsWith("#/admin/buckets")) return showBucketSettings(pane, decodeURIComponent(hash.slice("#/admin/buckets/".length)));
  return showBuckets(pane);
}

document.getElementById("login-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  setToken(document.getElementById("token").value.trim());
  document.getElementById("token").value = "";
  if (await login()) route(true);
});
// Logged out at once (a reload right after finds no token); the page's links are revoked after.
// Without a token, the same button goes to the log in.
document.getElementById("logout").addEventListener("click", () => {
  const old = token();
  setToken(null);
  setGrants([]);
  document.getElementById("principal").textContent = "";
  location.hash = "#/";
  showLogin();
  if (old) revokePageLinks(old);
});
document.getElementById("grants-toggle").addEventListener("click", (e) => {
  const list = document.getElementById("grants");
  list.hidden = !list.hidden;
  e.target.setAttribute("aria-expanded", String(!list.hidden));
});
document.getElementById("uploads-clear").addEventListener("click", clearFinished);
document.getElementById("name-cancel").addEventListener("click", () => document.getElementById("name-dialog").close("cancel"));
window.addEventListener("hashchange", () => route(true));
whenFinished((key) => refreshIfUnder(key));

status();
setInterval(status, 30000);
login().then((ok) => { if (ok) route(); });
