// A tus 1.0.0 client (core, creation, termination): POST to create, PATCH in chunks, HEAD to
// learn the server's offset before resuming. Upload URLs are remembered in localStorage, keyed
// by the file's name, size, last modification and target key, so that after a reload or a lost
// connection the same file resumes from the server's offset instead of from zero.
import { authHeaders } from "./api.js";

const STORE = "blobd.tus.";
const CHUNK = 8 * 1024 * 1024;
const DELAYS = [1000, 2000, 4000, 8000, 16000, 30000];

function b64(text) { return btoa(String.fromCharCode(...new TextEncoder().encode(text))); }

export function fingerprint(file, key) {
  return STORE + [file.name, file.size, file.lastModified, key].join("|");
}

export class TusUpload {
  /** `events`: onProgress(sent, total), onStatus(text), onSuccess(), onError(error). */
  constructor(file, key, events, endpoint = "/v1/uploads") {
    Object.assign(this, { file, key, events, endpoint });
    this.offset = 0;
    this.url = null;
    this.state = "queued";
    this.attempt = 0;
    this.xhr = null;
    this.timer = null;
    this.resumedFrom = null;
    this.retries = 0;
  }

  async start() {
    if (this.state === "running" || this.state === "done") return;
    this.state = "running";
    clearTimeout(this.timer);
    try {
      await this.locate();
      while (this.offset < this.file.size || this.file.size === 0) {
        if (this.state !== "running") return;
        const before = this.offset;
        await this.patch();
        if (this.offset > before) this.attempt = 0;
        if (this.file.size === 0) break;
      }
      this.state = "done";
      localStorage.removeItem(fingerprint(this.file, this.key));
      this.events.onSuccess?.();
    } catch (error) {
      if (this.state !== "running") return;  // paused or cancelled meanwhile
      this.retryOrFail(error);
    }
  }

  /** A failure that another try may cure (network, 5xx, 409, 423, 429) is retried with backoff. */
  retryOrFail(error) {
    const status = error.status || 0;
    const retriable = status === 0 || status >= 500 || [409, 423, 429].includes(status);
    if (retriable && this.attempt < DELAYS.length) {
      const delay = DELAYS[this.attempt++];
      this.retries++;
      this.state = "waiting";
      this.events.onStatus?.(`connection lost; retrying in ${delay / 1000} s (try ${this.attempt})`);
      this.timer = setTimeout(() => { this.state = "queued"; this.start(); }, delay);
      return;
    }
    this.state = "failed";
    this.events.onError?.(error);
  }

  /** The upload's URL and offset: a remembered upload's (HEAD), else a new one (POST). */
  async locate() {
    const remembered = this.url || localStorage.getItem(fingerprint(this.file, this.key));
    if (remembered) {
      const response = await this.request("HEAD", remembered);
      if (response.status === 200 || response.status === 204) {
        this.url = remembered;
        this.offset = Number(response.headers["upload-offset"] || 0);
        this.resumedFrom = this.offset;
        this.events.onProgress?.(this.offset, this.file.size);
        this.events.onStatus?.(`resuming at ${this.offset} bytes`);
        return;
      }
      if (response.status !== 404 && response.status !== 410 && response.status !== 403) throw response;
      localStorage.removeItem(fingerprint(this.file, this.key));
    }
    const metadata = [["key", this.key], ["filename", this.file.name],
      ["content-type", this.file.type || "application/octet-stream"]]
      .map(([k, v]) => k + " " + b64(v)).join(",");
    const response = await this.request("POST", this.endpoint, {
      "Upload-Length": String(this.file.size), "Upload-Metadata": metadata });
    if (response.status !== 201) throw response;
    this.url = new URL(response.headers["location"], location.href).pathname;
    this.offset = 0;
    this.resumedFrom = null;
    localStorage.setItem(fingerprint(this.file, this.key), this.url);
  }

  async patch() {
    const end = Math.min(this.offset + CHUNK, this.file.size);
    const response = await this.request("PATCH", this.url, {
      "Upload-Offset": String(this.offset), "Content-Type": "application/offset+octet-stream",
    }, this.file.slice(this.offset, end), (sent) => this.events.onProgress?.(this.offset + sent, this.file.size));
    if (response.status === 409) {  // the server has another offset: ask it
      await this.locate();
      return;
    }
    if (response.status !== 204) throw response;
    this.offset = Number(response.headers["upload-offset"]);
    this.events.onProgress?.(this.offset, this.file.size);
  }

  pause() {
    if (this.state === "done" || this.state === "cancelled") return;
    this.state = "paused";
    clearTimeout(this.timer);
    this.xhr?.abort();
    this.events.onStatus?.("paused");
  }

  resume() {
    if (this.state === "paused" || this.state === "failed") { this.attempt = 0; this.state = "queued"; this.start(); }
  }

  /** Stops the upload and terminates it on the server (tus DELETE), so nothing is kept. */
  async cancel() {
    const wasDone = this.state === "done";
    this.state = "cancelled";
    clearTimeout(this.timer);
    this.xhr?.abort();
    localStorage.removeItem(fingerprint(this.file, this.key));
    const terminated = !this.url || wasDone || await this.terminate();
    this.events.onStatus?.(terminated ? "cancelled" : "cancelled (the server did not confirm; it drops the upload when it expires)");
  }

  /** DELETE of the upload URL, tried again while the server is still busy with the aborted
   * PATCH (409, 423, 5xx or no answer); true once it is gone. */
  async terminate() {
    for (const delay of [0, 250, 500, 1000, 2000, 4000]) {
      if (delay) await new Promise((done) => setTimeout(done, delay));
      try {
        const response = await this.request("DELETE", this.url);
        if ([204, 404, 410].includes(response.status)) return true;
      } catch (error) {
        if (error.status && error.status < 500) return false;
      }
    }
    return false;
  }

  /** One tus request by XMLHttpRequest (for upload progress); resolves {status, headers}. */
  request(method, url, headers = {}, body = null, onSent = null) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      this.xhr = xhr;
      xhr.open(method, url);
      const all = authHeaders({ "Tus-Resumable": "1.0.0", ...headers });
      for (const [name, value] of Object.entries(all)) xhr.setRequestHeader(name, value);
      if (onSent) xhr.upload.onprogress = (e) => onSent(e.loaded);
      xhr.onload = () => {
        const out = {};
        for (const line of xhr.getAllResponseHeaders().trim().split(/[\r\n]+/)) {
          const i = line.indexOf(":");
          if (i > 0) out[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
        }
        const answer = { status: xhr.status, headers: out, body: xhr.responseText };
        if (xhr.status >= 500 || [401, 403, 413, 415, 400, 460].includes(xhr.status)) reject(answer); else resolve(answer);
      };
      xhr.onerror = () => reject({ status: 0 });
      xhr.onabort = () => reject({ status: 0, aborted: true });
      xhr.send(body);
    });
  }
}
