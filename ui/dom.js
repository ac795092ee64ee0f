// A small element builder: h("button", {type: "button", onclick}, "Text").
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (name in el && typeof value !== "string") el[name] = value;
    else el.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

export const $ = (selector, root = document) => root.querySelector(selector);

/** Shows `message` in the view's message line (role=alert for errors). */
export function notice(message, isError = false) {
  let line = document.getElementById("notice");
  if (!line) return;
  line.textContent = message;
  line.className = isError ? "error" : "hint";
  line.setAttribute("role", isError ? "alert" : "status");
}

/** The elements of `root` that Tab stops at. */
export function tabbable(root) {
  return [...root.querySelectorAll("a[href], button, input, select, textarea, summary, [tabindex]")]
    .filter((el) => !el.disabled && el.tabIndex >= 0 && !el.closest("[hidden]") && el.getClientRects().length > 0);
}

/** Opens `dialog` as a modal: Tab and Shift+Tab stay inside it, Escape closes it (the
 * browser's cancel), `first` gets the focus, and the focus goes back to what had it when the
 * dialog closes. Resolves with the dialog's returnValue. */
export function openModal(dialog, first) {
  const opener = document.activeElement;
  const trap = (e) => {
    if (e.key !== "Tab") return;
    const stops = tabbable(dialog);
    if (!stops.length) return;
    const at = stops.indexOf(document.activeElement);
    const next = e.shiftKey ? (at <= 0 ? stops.length - 1 : at - 1) : (at === stops.length - 1 ? 0 : at + 1);
    e.preventDefault();
    stops[next].focus();
  };
  return new Promise((resolve) => {
    dialog.addEventListener("keydown", trap);
    dialog.addEventListener("close", () => {
      dialog.removeEventListener("keydown", trap);
      if (opener && opener.isConnected && typeof opener.focus === "function") opener.focus();
      resolve(dialog.returnValue);
    }, { once: true });
    dialog.returnValue = "cancel";
    dialog.showModal();
    first.focus();
  });
}

/** A modal confirmation (the <dialog> of the page); resolves true on OK. */
export async function confirmDialog(text, ok = "Delete") {
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = ok;
  const dialog = document.getElementById("confirm");
  return (await openModal(dialog, document.getElementById("confirm-cancel"))) === "ok";
}

/** Asks for a name in the page's name dialog (label, Enter to accept, Escape to cancel);
 * resolves the trimmed name, or null when cancelled. `check(name)` returns an error text or "". */
export async function askName(options) {
  const answer = await askNameWith(options);
  return answer && answer.name;
}

/** askName with an optional checkbox labelled `option` (hidden when null): resolves
 * {name, checked}, or null when cancelled. */
export async function askNameWith({ title, label, hint = "", ok = "Create", check = () => "", option = null }) {
  const dialog = document.getElementById("name-dialog");
  const input = document.getElementById("name-input");
  const error = document.getElementById("name-error");
  const box = document.getElementById("name-option");
  document.getElementById("name-title").textContent = title;
  document.getElementById("name-label").textContent = label;
  document.getElementById("name-hint").textContent = hint;
  document.getElementById("name-ok").textContent = ok;
  document.getElementById("name-option-label").hidden = !option;
  document.getElementById("name-option-text").textContent = option || "";
  box.checked = false;
  input.value = "";
  error.textContent = "";
  input.removeAttribute("aria-invalid");
  const form = dialog.querySelector("form");
  const validate = (e) => {
    if (e.submitter && e.submitter.value !== "ok") return;
    const problem = input.value.trim() ? check(input.value.trim()) : "Enter a name.";
    if (!problem) return;
    e.preventDefault();
    error.textContent = problem;
    input.setAttribute("aria-invalid", "true");
    input.focus();
  };
  const clear = () => { error.textContent = ""; input.removeAttribute("aria-invalid"); };
  form.addEventListener("submit", validate);
  input.addEventListener("input", clear);
  try {
    return (await openModal(dialog, input)) === "ok" ? { name: input.value.trim(), checked: Boolean(option) && box.checked } : null;
  } finally {
    form.removeEventListener("submit", validate);
    input.removeEventListener("input", clear);
  }
}

/** Copies text to the clipboard, falling back to selecting it. */
export async function copy(text, input) {
  try { await navigator.clipboard.writeText(text); return true; } catch {
    if (input) { input.select(); document.execCommand?.("copy"); }
    return false;
  }
}
