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

/** A modal confirmation (the <dialog> of the page); resolves true on OK. */
export function confirmDialog(text, ok = "Delete") {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = ok;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.returnValue = "cancel";
    dialog.showModal();
    document.getElementById("confirm-cancel").focus();
  });
}

/** Copies text to the clipboard, falling back to selecting it. */
export async function copy(text, input) {
  try { await navigator.clipboard.writeText(text); return true; } catch {
    if (input) { input.select(); document.execCommand?.("copy"); }
    return false;
  }
}
