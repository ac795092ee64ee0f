// The upload panel: files from the picker, the folder picker or a drop, each a tus upload with
// its own progress and pause/resume/cancel, and the total. `onFinished` runs when one ends.
import { formatSize } from "./api.js";
import { h } from "./dom.js";
import { TusUpload } from "./tus.js";

const uploads = [];
let onFinished = () => {};

export function whenFinished(callback) { onFinished = callback; }

function updateTotal() {
  const active = uploads.filter((u) => u.tus.state !== "cancelled");
  const total = active.reduce((sum, u) => sum + u.tus.file.size, 0);
  const sent = active.reduce((sum, u) => sum + u.sent, 0);
  const done = active.filter((u) => u.tus.state === "done").length;
  document.getElementById("uploads-total").textContent =
    `${done} of ${active.length} done · ${formatSize(sent)} of ${formatSize(total)}`;
  const bar = document.getElementById("uploads-progress");
  bar.max = Math.max(total, 1);
  bar.value = sent;
}

/** Starts uploading `items` ([{file, key}]), at most two at a time. */
export function addUploads(items) {
  const panel = document.getElementById("uploads");
  panel.hidden = false;
  for (const { file, key } of items) {
    const entry = { sent: 0 };
    const bar = h("progress", { max: Math.max(file.size, 1), value: 0, "aria-label": `Progress of ${key}` });
    const status = h("span", { class: "upload-status" }, "queued");
    const pause = h("button", { type: "button", "aria-label": `Pause ${key}`, onclick: () => toggle() }, "Pause");
    const cancel = h("button", { type: "button", "aria-label": `Cancel ${key}`, onclick: async () => {
      const hadFocus = document.activeElement === cancel;
      pause.disabled = true; cancel.disabled = true;
      row.classList.add("cancelled");
      status.textContent = "cancelling…";
      if (hadFocus) document.getElementById("uploads-clear").focus();
      await entry.tus.cancel();
      updateTotal(); pump();
    } }, "Cancel");
    const row = h("li", { class: "upload", dataset: { key } }, h("span", { class: "upload-name" }, key), bar, pause, cancel, status);
    const done = () => { pause.disabled = true; cancel.disabled = entry.tus.state !== "running" && entry.tus.state !== "waiting"; updateTotal(); pump(); };
    const toggle = () => {
      if (entry.tus.state === "paused" || entry.tus.state === "failed") { entry.tus.resume(); pause.textContent = "Pause"; pause.setAttribute("aria-label", `Pause ${key}`); }
      else { entry.tus.pause(); pause.textContent = "Resume"; pause.setAttribute("aria-label", `Resume ${key}`); pump(); }
    };
    entry.tus = new TusUpload(file, key, {
      onProgress: (sent, total) => {
        entry.sent = sent; bar.value = sent;
        if (entry.tus.state === "running") status.textContent = `${formatSize(sent)} of ${formatSize(total)}`
          + (entry.tus.resumedFrom ? ` (resumed from ${entry.tus.resumedFrom} bytes)` : "");
        updateTotal();
      },
      onStatus: (text) => { status.textContent = text; },
      onSuccess: () => {
        entry.sent = file.size; bar.value = bar.max;
        const retries = entry.tus.retries ? `, ${entry.tus.retries} ${entry.tus.retries === 1 ? "retry" : "retries"}` : "";
        status.textContent = "done" + (entry.tus.resumedFrom ? ` (resumed from ${entry.tus.resumedFrom} bytes${retries})` : retries && ` (${retries.slice(2)})`);
        row.classList.add("done"); done(); onFinished(key);
      },
      onError: (error) => {
        let detail = "";
        try { detail = JSON.parse(error.body || "{}").detail || ""; } catch { /* not JSON */ }
        status.textContent = `failed (${error.status || "network"}) ${detail}`;
        row.classList.add("failed"); pause.textContent = "Retry"; pause.setAttribute("aria-label", `Retry ${key}`); updateTotal(); pump();
      },
    });
    uploads.push(entry);
    document.getElementById("uploads-list").append(row);
  }
  updateTotal();
  pump();
}

/** Keeps two uploads running. */
function pump() {
  const running = uploads.filter((u) => u.tus.state === "running" || u.tus.state === "waiting").length;
  for (const entry of uploads.filter((u) => u.tus.state === "queued").slice(0, Math.max(0, 2 - running))) entry.tus.start();
}

export function clearFinished() {
  for (let i = uploads.length - 1; i >= 0; i--) {
    if (["done", "cancelled"].includes(uploads[i].tus.state)) uploads.splice(i, 1);
  }
  for (const row of [...document.querySelectorAll("#uploads-list li.done, #uploads-list li.cancelled")]) row.remove();
  updateTotal();
}

/** The files of a drop, folders walked: [{file, path}]. */
export async function droppedFiles(dataTransfer) {
  const entries = [...dataTransfer.items].map((item) => item.webkitGetAsEntry?.()).filter(Boolean);
  if (!entries.length) return [...dataTransfer.files].map((file) => ({ file, path: file.name }));
  const out = [];
  async function walk(entry, path) {
    if (entry.isFile) {
      out.push({ file: await new Promise((ok, fail) => entry.file(ok, fail)), path: path + entry.name });
    } else if (entry.isDirectory) {
      const reader = entry.createReader();
      for (;;) {
        const batch = await new Promise((ok, fail) => reader.readEntries(ok, fail));
        if (!batch.length) break;
        for (const child of batch) await walk(child, path + entry.name + "/");
      }
    }
  }
  for (const entry of entries) await walk(entry, "");
  return out;
}
