"""The browser test's steps for previews of video, PDF and text, and for the upload panel's
controls: drag and drop, pause and resume, cancel (terminated on the server), and the automatic
retry after a lost connection."""
import base64, hashlib, os, re, subprocess, time
import requests

from proxy import CuttableProxy
from page_helpers import ADMIN, BASE, PORT, WORK, api, check, click, css, go, login, shot, step, wait

MIB = 1 << 20


def tiny_pdf(text):
    """A valid one-page PDF showing `text`, its cross-reference table at the right offsets."""
    content = b"BT /F1 24 Tf 20 60 Td (" + text.encode() + b") Tj ET"
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)


def make_video():
    """Starts ffmpeg on 60 s of H.264, 320x240 (~15 MB, so that a seek near the end is a range the
    player has not read yet); seed_previews waits for it."""
    clip = os.path.join(WORK, "clip.mp4")
    return clip, subprocess.Popen(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=duration=60:size=320x240:rate=10,noise=alls=25:allf=t",
                                   "-c:v", "libx264", "-preset", "ultrafast", "-crf", "20", "-g", "10", "-pix_fmt", "yuv420p", "-movflags", "+faststart", clip])


def seed_previews(video):
    """photos/clip.mp4 (from make_video), photos/doc.pdf and photos/long.txt (over the 64 KiB preview)."""
    clip, ffmpeg = video
    check(ffmpeg.wait(timeout=60) == 0, "ffmpeg made the test video")
    with open(clip, "rb") as f:
        check(api("PUT", "/v1/blobs/photos/clip.mp4", data=f, headers={"Content-Type": "video/mp4"}).status_code == 201, "clip.mp4")
    check(api("PUT", "/v1/blobs/photos/doc.pdf", data=tiny_pdf("blobd PDF preview"), headers={"Content-Type": "application/pdf"}).status_code == 201, "doc.pdf")
    long_text = "".join(f"line {i:06d} of a long text\n" for i in range(4000)).encode()
    check(api("PUT", "/v1/blobs/photos/long.txt", data=long_text, headers={"Content-Type": "text/plain; charset=utf-8"}).status_code == 201, "long.txt")
    return os.path.getsize(clip)


def link_of(driver):
    """The page's share link (/s/ID) behind the blob view's download link."""
    return "/s/" + css(driver, "a#download")[0].get_attribute("href").split("/s/")[1].split("?")[0]


def preview_video_pdf_text(driver):
    """Seeks to 50 s of the video (the player asks for that part with a range request; the Swift
    side counts the 206 answers of the link in blobd's access log), shows the PDF in the page and
    the start of a long text. Prints `ranged-key KEY /s/ID` for the Swift side."""
    go(driver, "#/o/photos/clip.mp4")
    media = "document.getElementById('preview-media')"
    wait(driver, lambda d: css(d, "video#preview-media") and d.execute_script(f"return {media}.readyState") >= 1, "video metadata")
    check(driver.execute_script(f"return [{media}.videoWidth, Math.round({media}.duration)]") == [320, 60], "a 320x240 video of 60 s")
    driver.execute_script(f"const m = {media}; window.seekedTo = null; m.addEventListener('seeked', () => {{ window.seekedTo = m.currentTime; }});"
                          "m.currentTime = 50; m.play().catch(() => {});")
    wait(driver, lambda d: d.execute_script(f"return window.seekedTo !== null && {media}.currentTime >= 50 && {media}.readyState >= 2"), "seeked to 50 s", timeout=30)
    wait(driver, lambda d: d.execute_script(f"return {media}.currentTime > window.seekedTo"), "playing after the seek", timeout=15)
    print("ranged-key photos/clip.mp4 " + link_of(driver), flush=True)
    shot(driver, "video")
    go(driver, "#/o/photos/doc.pdf")
    frame = "document.getElementById('preview-pdf')"
    wait(driver, lambda d: css(d, "iframe#preview-pdf") and d.execute_script(f"return {frame}.contentDocument?.contentType") == "application/pdf",
         "the PDF shown in the page (a PDF document in the frame, not a download)")
    # Chromium's PDF viewer draws in a frame of its own that a script cannot look into: the
    # frame's picture goes from a flat grey (under 3 KB as PNG) to the toolbar and the page.
    driver.execute_script(f"{frame}.scrollIntoView({{block: 'center'}})")
    wait(driver, lambda d: len(css(d, "iframe#preview-pdf")[0].screenshot_as_png) > 10000, "the PDF viewer drew the page", timeout=15)
    src = css(driver, "iframe#preview-pdf")[0].get_attribute("src")
    answer = requests.get(src)
    check(answer.headers.get("Content-Disposition", "").startswith("inline") and answer.content.startswith(b"%PDF-1.4"), f"inline PDF: {answer.headers}")
    check(css(driver, "iframe#preview-pdf")[0].get_attribute("title") == "PDF doc.pdf", "the frame has a name")
    shot(driver, "pdf")
    go(driver, "#/o/photos/long.txt")
    wait(driver, lambda d: css(d, "#preview-text"), "text preview")
    text = css(driver, "#preview-text")[0].get_attribute("textContent")
    check(text.startswith("line 000000 of a long text\n") and text.endswith("\n…") and len(text) == 65536 + 2, f"the first 64 KiB of the text: {len(text)}")
    step("previewed a video (seeked to 50 s), a PDF in the page and a text")


def random_file(name, size):
    path = os.path.join(WORK, name)
    data = os.urandom(size)
    with open(path, "wb") as f:
        f.write(data)
    return path, hashlib.sha256(data).hexdigest()


def stored_sha256(key):
    head = api("HEAD", "/v1/blobs/" + key)
    check(head.status_code == 200, f"{key} stored: {head.status_code}")
    return base64.b64decode(head.headers["Repr-Digest"].split(":")[1]).hex()


def row(driver, key, part):
    return css(driver, f"#uploads-list li[data-key='{key}'] {part}")[0]


def status_of(driver, key):
    return row(driver, key, ".upload-status").text


def progress_of(driver, key):
    bar = row(driver, key, "progress")
    return float(bar.get_attribute("value")) / float(bar.get_attribute("max"))


def upload_url(driver, name):
    urls = driver.execute_script("return Object.keys(localStorage).filter(k => k.startsWith('blobd.tus.') && k.includes(arguments[0])).map(k => localStorage.getItem(k))", name)
    check(len(urls) == 1, f"one remembered upload URL of {name}: {urls}")
    return urls[0]


def server_offset(url):
    head = api("HEAD", url, headers={"Tus-Resumable": "1.0.0"})
    return head.status_code, int(head.headers.get("Upload-Offset", -1))


def drop_files(driver):
    """Two files dropped on the drop zone, as a DataTransfer holding File objects."""
    zone = css(driver, "#dropzone")[0]
    driver.execute_script("""const zone = arguments[0], data = new DataTransfer();
        data.items.add(new File(['dropped one\\n'], 'dropped-1.txt', {type: 'text/plain'}));
        data.items.add(new File(['dropped two\\n'], 'dropped-2.txt', {type: 'text/plain'}));
        zone.dispatchEvent(new DragEvent('dragover', {dataTransfer: data, bubbles: true, cancelable: true}));
        window.dragOver = zone.classList.contains('over');
        zone.dispatchEvent(new DragEvent('drop', {dataTransfer: data, bubbles: true, cancelable: true}));""", zone)
    check(driver.execute_script("return window.dragOver"), "the drop zone shows the drag over it")
    for n, word in [(1, "one"), (2, "two")]:
        wait(driver, lambda d: status_of(d, f"inbox/dropped-{n}.txt").startswith("done"), f"dropped-{n}.txt uploaded")
        check(api("GET", f"/v1/blobs/inbox/dropped-{n}.txt").content == f"dropped {word}\n".encode(), f"dropped-{n}.txt stored")
    wait(driver, lambda d: {"dropped-1.txt", "dropped-2.txt"} <= {a.text for a in css(d, "#rows td.name a")}, "the dropped files listed")
    check(not css(driver, "#dropzone.over"), "the drop zone back to normal")


def pause_and_resume(driver, size):
    path, digest = random_file("paused.bin", size)
    css(driver, "#file-input")[0].send_keys(path)
    key = "inbox/paused.bin"
    wait(driver, lambda d: progress_of(d, key) > 0.3, "paused.bin a third sent")
    click(row(driver, key, f"button[aria-label='Pause {key}']"))
    wait(driver, lambda d: status_of(d, key) == "paused", "paused")
    url = upload_url(driver, "paused.bin")
    offsets = [server_offset(url)]
    for _ in range(40):  # what was under way when the request was aborted lands; then nothing more
        time.sleep(0.25)
        offsets.append(server_offset(url))
        if len(offsets) >= 5 and len(set(offsets[-5:])) == 1:
            break
    status, offset = offsets[-1]
    check(status == 200 and 0 < offset < size and len(set(offsets[-5:])) == 1, f"no byte arrives while paused: {offsets}")
    check(status_of(driver, key) == "paused", "still paused")
    click(row(driver, key, f"button[aria-label='Resume {key}']"))
    wait(driver, lambda d: status_of(d, key).startswith("done"), "resumed upload done", timeout=60)
    text = status_of(driver, key)
    check(f"resumed from {offset} bytes" in text, f"resumed from the server's offset {offset}: {text}")
    check(stored_sha256(key) == digest, "paused.bin stored whole")
    os.remove(path)
    return offset


def cancel(driver, size):
    path, _ = random_file("cancelled.bin", size)
    css(driver, "#file-input")[0].send_keys(path)
    key = "inbox/cancelled.bin"
    wait(driver, lambda d: progress_of(d, key) > 0.3, "cancelled.bin a third sent")
    url = upload_url(driver, "cancelled.bin")
    check(server_offset(url)[0] == 200, "the upload exists on the server")
    click(row(driver, key, f"button[aria-label='Cancel {key}']"))
    wait(driver, lambda d: status_of(d, key) == "cancelled", "cancelled (terminated)", timeout=20)
    check(server_offset(url)[0] == 404, "the upload is terminated on the server")
    check(api("HEAD", "/v1/blobs/" + key).status_code == 404, "nothing stored under the key")
    check(driver.execute_script("return Object.keys(localStorage).filter(k => k.includes('cancelled.bin')).length") == 0, "forgotten by the page")
    os.remove(path)
    print("terminated-upload " + key, flush=True)


def retry_after_cut(driver, proxy, size):
    path, digest = random_file("retried.bin", size)
    driver.execute_script("window.notReloaded = true")
    css(driver, "#file-input")[0].send_keys(path)
    key = "inbox/retried.bin"
    wait(driver, lambda d: progress_of(d, key) > 0.3, "retried.bin a third sent")
    driver.execute_script("""const status = arguments[0]; window.statuses = [];
        new MutationObserver(() => window.statuses.push(status.textContent)).observe(status, {childList: true, characterData: true, subtree: true});""",
                          row(driver, key, ".upload-status"))
    proxy.drop(outage=2)  # the first try, a second later, finds no server; the second, 2 s after it, does
    wait(driver, lambda d: "retrying" in status_of(d, key), "the page noticing the lost connection")
    wait(driver, lambda d: status_of(d, key).startswith("done"), "done after the retry", timeout=60)
    text = status_of(driver, key)
    resumed = int(text.split("resumed from ")[1].split(" ")[0])
    delays = [int(m.group(1)) for m in (re.match(r"connection lost; retrying in (\d+) s", t) for t in driver.execute_script("return window.statuses")) if m]
    check(0 < resumed < size and delays in ([1, 2], [1, 2, 4]) and f"{len(delays)} retries)" in text,
          f"retried by itself with backoff ({delays} s) from the server's offset: {text}")
    check(driver.execute_script("return window.notReloaded === true"), "no reload")
    check(stored_sha256(key) == digest, "retried.bin stored whole")
    os.remove(path)
    return resumed, delays


def upload_controls(driver):
    """Through a proxy that passes 4 MiB a second upstream: drop, pause/resume, cancel, retry."""
    proxy = CuttableProxy(PORT)
    proxy.rate = 4 * MIB
    try:
        login(driver, f"http://127.0.0.1:{proxy.port}", ADMIN)
        go(driver, "#/b/inbox/")
        wait(driver, lambda d: css(d, "#dropzone") and css(d, "#file-input"), "upload controls")
        drop_files(driver)
        paused_at = pause_and_resume(driver, 8 * MIB)
        cancel(driver, 8 * MIB)
        shot(driver, "upload-controls")
        resumed, delays = retry_after_cut(driver, proxy, 8 * MIB)
    finally:
        proxy.cut()
    step(f"dropped two files; paused at {paused_at} and resumed; cancelled (tus DELETE); retried by itself after {delays} s from {resumed}")
