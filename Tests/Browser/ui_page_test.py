"""The web page at /ui/ in headless Chromium (issue 24), against a running blobd.
Environment: BASE (blobd's URL), ADMIN and READER (tokens), OUT (screenshots), WORK (temp dir).
Prints one line per step; exits non-zero on the first failure."""
import base64, concurrent.futures, hashlib, math, os, struct, sys, wave, zlib
import requests
from selenium.webdriver.common.by import By

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy import CuttableProxy  # noqa: E402
from ui_keyboard_steps import keyboard  # noqa: E402
from ui_more_steps import link_of, make_video, preview_video_pdf_text, seed_previews, upload_controls  # noqa: E402
from page_helpers import (ADMIN, BASE, OUT, PORT, READER, WORK, accessible, api, browser, check, click, count_text,  # noqa: E402
                          css, go, login, shot, step, wait)


def seed():
    """3,000 keys in big/ (2,900 files and 10 folders of 10), and photos/ to preview."""
    keys = [f"big/f{i:04d}.txt" for i in range(2900)] + [f"big/dir{d:02d}/x{i}.txt" for d in range(10) for i in range(10)]
    session = requests.Session()
    def put(key):
        r = session.put(BASE + "/v1/blobs/" + key, data=key.encode(), headers={"Authorization": "Bearer " + ADMIN})
        return r.status_code
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(put, keys))
    check(all(c in (200, 201) for c in codes), "seeding big/")
    rows = b"".join(b"\x00" + b"".join(bytes([x * 4, y * 4, 160]) for x in range(64)) for y in range(64))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 64, 64, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    check(api("PUT", "/v1/blobs/photos/pic.png", data=png, headers={"Content-Type": "image/png"}).status_code in (200, 201), "pic.png")
    tone = os.path.join(WORK, "tone.wav")
    with wave.open(tone, "wb") as w:
        # 240 s at 44.1 kHz (21 MB): the player fetches a part, and a seek near the end asks for another range.
        second = b"".join(struct.pack("<h", int(8000 * math.sin(i * 440 * 2 * math.pi / 44100))) for i in range(44100))
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(44100)
        w.writeframes(second * 240)
    check(api("PUT", "/v1/blobs/photos/tone.wav", data=open(tone, "rb").read(), headers={"Content-Type": "audio/wav"}).status_code in (200, 201), "tone.wav")
    for name in ["note.txt", "del-a.txt", "del-b.txt"]:
        check(api("PUT", "/v1/blobs/photos/" + name, data=f"hello from {name}\n".encode(), headers={"Content-Type": "text/plain"}).status_code in (200, 201), name)


def browse(driver):
    go(driver, "#/")
    wait(driver, lambda d: css(d, ".buckets a"), "bucket list")
    check([a.text for a in css(driver, ".buckets a.folder")] == ["big", "inbox", "photos"], "buckets listed (GET /v1/buckets: inbox too, though empty)")
    click(css(driver, ".buckets a[href='#/b/big/']")[0])
    wait(driver, lambda d: count_text(d) == "1000 entries so far", "first page of big/")
    accessible(driver, "folder")
    for expected in ["2000 entries so far", "2910 entries"]:
        click(driver.find_element(By.ID, "load-more"))
        wait(driver, lambda d: count_text(d) == expected, expected)
    names = driver.execute_script("return [...document.querySelectorAll('#rows td.name a')].map((a) => a.textContent)")
    check(len(names) == 2910 and len(set(names)) == 2910, f"every key once: {len(names)} rows, {len(set(names))} distinct")
    check(names[:2] == ["dir00/", "dir01/"] and names[10] == "f0000.txt" and names[-1] == "f2899.txt", f"order {names[:2]} {names[10]} {names[-1]}")
    driver.execute_script("window.scrollTo(0, 0)")
    shot(driver, "browse")
    click(driver.find_element(By.CSS_SELECTOR, "th[data-by='name'] button"))
    wait(driver, lambda d: css(d, "th[data-by='name']")[0].get_attribute("aria-sort") == "descending", "sorted descending")
    check(css(driver, "#rows td.name a")[10].text == "f2899.txt", "descending by name")
    driver.find_element(By.ID, "filter").send_keys("f01")
    wait(driver, lambda d: count_text(d) == "100 entries", "filter f01")
    css(driver, "#filter")[0].clear()
    go(driver, "#/b/big/dir03/")
    wait(driver, lambda d: count_text(d) == "10 entries", "folder dir03")
    crumbs = [e.text for e in css(driver, ".crumbs li")]
    check(crumbs == ["Buckets", "big", "dir03"], f"breadcrumbs {crumbs}")
    step("browsed 3,000 keys: pages, sort, filter, folders, breadcrumbs")


def upload_and_resume(driver):
    """200 MiB through a proxy that is cut halfway; after a reload the page resumes from the
    server's offset, and the stored SHA-256 is the file's."""
    path = os.path.join(WORK, "big.bin")
    size = 200 * 1024 * 1024
    digest = hashlib.sha256()
    with open(path, "wb") as f:
        block = os.urandom(1 << 20)
        for i in range(200):
            part = block[:8] + i.to_bytes(4, "big") + block[12:]
            f.write(part)
            digest.update(part)
    proxy = CuttableProxy(PORT)
    proxy.limit = size // 2
    front = f"http://127.0.0.1:{proxy.port}"
    login(driver, front, ADMIN)
    go(driver, "#/b/inbox/")
    wait(driver, lambda d: css(d, "#file-input"), "upload controls")
    css(driver, "#file-input")[0].send_keys(path)
    wait(driver, lambda d: proxy.closed.is_set(), "the proxy cut halfway", timeout=90)
    wait(driver, lambda d: "retrying" in d.find_element(By.CSS_SELECTOR, "#uploads-list .upload-status").text, "the page noticing the cut")
    remembered = driver.execute_script("return Object.keys(localStorage).filter(k => k.startsWith('blobd.tus.'))")
    check(len(remembered) == 1 and "big.bin" in remembered[0] and "inbox/big.bin" in remembered[0], f"upload URL remembered: {remembered}")
    step(f"cut after {proxy.sent} bytes upstream")
    proxy = CuttableProxy(PORT, port=proxy.port)  # the network is back
    driver.refresh()
    wait(driver, lambda d: d.find_element(By.ID, "principal").text, "still logged in after reload")
    go(driver, "#/b/inbox/")
    wait(driver, lambda d: css(d, "#file-input"), "upload controls again")
    css(driver, "#file-input")[0].send_keys(path)
    status = lambda d: d.find_element(By.CSS_SELECTOR, "#uploads-list .upload-status").text
    wait(driver, lambda d: status(d).startswith("done"), "upload done", timeout=120)
    text = status(driver)
    resumed = int(text.split("resumed from ")[1].split(" ")[0])
    check(0 < resumed < size, f"resumed from the server's offset, not zero: {text}")
    wait(driver, lambda d: any(a.text == "big.bin" for a in css(d, "#rows td.name a")), "the list refreshed after the upload")
    shot(driver, "upload")
    head = api("HEAD", "/v1/blobs/inbox/big.bin")
    stored = base64.b64decode(head.headers["Repr-Digest"].split(":")[1]).hex()
    check(int(head.headers["Content-Length"]) == size and stored == digest.hexdigest(), "stored SHA-256 is the file's")
    proxy.cut()
    os.remove(path)
    step(f"200 MiB upload resumed at {resumed} bytes after a cut and a reload; SHA-256 matches")


def preview(driver):
    login(driver, BASE, ADMIN)
    go(driver, "#/o/photos/pic.png")
    wait(driver, lambda d: css(d, "#preview-image") and d.execute_script("return document.getElementById('preview-image').naturalWidth") == 64, "image preview")
    facts = {e.get_attribute("data-fact"): e.text for e in css(driver, "dd[data-fact]")}
    check(facts["SHA-256"] == hashlib.sha256(api("GET", "/v1/blobs/photos/pic.png").content).hexdigest(), f"SHA-256 shown: {facts}")
    check(facts["Type"] == "image/png" and facts["ETag"].startswith('"'), f"details {facts}")
    link = css(driver, "a#download")[0]
    check(link.get_attribute("download") == "pic.png" and "/s/" in link.get_attribute("href"), "a real download link")
    check(requests.get(link.get_attribute("href")).content == api("GET", "/v1/blobs/photos/pic.png").content, "the link downloads without a token")
    accessible(driver, "details")
    shot(driver, "details")
    go(driver, "#/o/photos/tone.wav")
    wait(driver, lambda d: css(d, "#preview-media") and d.execute_script("return document.getElementById('preview-media').readyState") >= 1, "media metadata")
    driver.execute_script("const m = document.getElementById('preview-media'); m.currentTime = 230; m.play().catch(() => {});")
    wait(driver, lambda d: d.execute_script("const m = document.getElementById('preview-media'); return !m.seeking && m.currentTime >= 230 && m.readyState >= 2"), "seeked to 230 s")
    print("ranged-key photos/tone.wav " + link_of(driver), flush=True)
    step("previewed an image and seeked in an audio file")
    preview_video_pdf_text(driver)


def delete(driver):
    go(driver, "#/b/photos/")
    wait(driver, lambda d: len(css(d, "#rows tr")) >= 5, "photos/ listed")
    for key in ["photos/del-a.txt", "photos/del-b.txt"]:
        click(css(driver, f"#rows tr[data-key='{key}'] input.select")[0])
    click(css(driver, "#delete-selected")[0])
    wait(driver, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is not None, "confirmation dialog")
    shot(driver, "delete-confirm")
    click(css(driver, "#confirm-cancel")[0])
    check(api("HEAD", "/v1/blobs/photos/del-a.txt").status_code == 200, "cancel keeps the blobs")
    click(css(driver, "#delete-selected")[0])
    wait(driver, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is not None, "confirmation dialog again")
    click(css(driver, "#confirm-ok")[0])
    wait(driver, lambda d: not css(d, "#rows tr[data-key='photos/del-a.txt']"), "rows gone")
    check(api("HEAD", "/v1/blobs/photos/del-a.txt").status_code == 404 and api("HEAD", "/v1/blobs/photos/del-b.txt").status_code == 404, "deleted")
    step("deleted two blobs after a confirmation (cancel kept them)")


def read_only(driver):
    click(driver.find_element(By.ID, "logout"))
    login(driver, BASE, READER)
    go(driver, "#/b/photos/")
    wait(driver, lambda d: len(css(d, "#rows tr")) >= 3, "photos/ for the reader")
    check(not css(driver, "#file-input") and not css(driver, "#delete-selected") and not css(driver, "input.select") and not css(driver, "#new-folder"),
          "no upload or delete controls for a read-only token")
    check(css(driver, "#nav-keys")[0].get_attribute("hidden") is not None, "no admin pages")
    shot(driver, "read-only")
    status = driver.execute_async_script("""const done = arguments[arguments.length - 1];
        fetch('/v1/blobs/photos/note.txt', {method: 'DELETE', headers: {Authorization: 'Bearer ' + sessionStorage.getItem('blobd.token')}}).then(r => done(r.status));""")
    check(status == 403, f"a forced DELETE gets 403, got {status}")
    go(driver, "#/o/photos/note.txt")
    wait(driver, lambda d: css(d, "#preview-text"), "text preview for the reader")
    check("hello from note.txt" in css(driver, "#preview-text")[0].text and not css(driver, "#delete"), "reader sees the text, no delete")
    click(driver.find_element(By.ID, "logout"))
    step("read-only token: no upload/delete controls; forced DELETE is 403")


def share(driver):
    login(driver, BASE, ADMIN)
    go(driver, "#/o/photos/note.txt")
    wait(driver, lambda d: css(d, "#share-create"), "share form")
    css(driver, "#share-downloads")[0].send_keys("5")
    click(css(driver, "#share-create")[0])
    wait(driver, lambda d: css(d, "#share-url"), "share link made")
    url = css(driver, "#share-url")[0].get_attribute("value")
    shot(driver, "share")
    fresh = browser()
    try:
        fresh.get(url + "?inline")
        check("hello from note.txt" in fresh.page_source, "the link works in a fresh profile without a token")
        check(requests.get(url).text == "hello from note.txt\n", "link serves the blob")
        go(driver, "#/shares")
        wait(driver, lambda d: css(d, "#share-rows tr[data-id]"), "share list")
        share_id = url.rstrip("/").rsplit("/", 1)[1]
        check(css(driver, f"#share-rows tr[data-id='{share_id}']"), "the new link is listed")
        accessible(driver, "shares")
        shot(driver, "shares")
        click(css(driver, f"#share-rows tr[data-id='{share_id}'] button")[0])
        wait(driver, lambda d: not css(d, f"#share-rows tr[data-id='{share_id}']"), "revoked link gone from the list")
        # The fresh profile, still on the link's page, asks again (a problem+json answer would be saved, not shown).
        status = fresh.execute_async_script("const done = arguments[arguments.length - 1]; fetch(arguments[0], {cache: 'no-store'}).then(r => done(r.status));", url)
        check(status == 404, f"fresh profile gets 404 after revoke, got {status}")
        check(requests.get(url).status_code == 404, "revoked link is 404")
    finally:
        fresh.quit()
    step("share link: made, opened in a fresh profile, listed, revoked, 404")


def admin_key(driver):
    go(driver, "#/admin/keys")
    wait(driver, lambda d: css(d, "#key-form"), "keys page")
    css(driver, "#key-name")[0].send_keys("made-in-page")
    css(driver, "#key-grants")[0].send_keys("read:photos\nwrite:photos")
    click(css(driver, "#key-create")[0])
    wait(driver, lambda d: css(d, "#new-token"), "new key's token shown")
    token = css(driver, "#new-token")[0].text
    wait(driver, lambda d: any("made-in-page" in r.text for r in css(d, "#key-rows tr")), "new key listed")
    accessible(driver, "keys")
    shot(driver, "keys")
    check(api("PUT", "/v1/blobs/photos/by-new-key.txt", token=token, data=b"new").status_code == 201, "the new key writes")
    check(api("GET", "/v1/blobs/photos/by-new-key.txt", token=token).content == b"new", "the new key reads")
    check(api("DELETE", "/v1/blobs/photos/by-new-key.txt", token=token).status_code == 403, "the new key holds no delete")
    go(driver, "#/admin/buckets/photos")
    wait(driver, lambda d: css(d, "#public-prefixes") and css(d, "#setting-cors-status")[0].text, "bucket settings")
    css(driver, "#public-prefixes")[0].send_keys("pub/")
    click(css(driver, "#public-save")[0])
    wait(driver, lambda d: "Saved" in d.find_element(By.CSS_SELECTOR, "#public-form p[aria-live]").text, "public prefixes saved")
    check(api("PUT", "/v1/blobs/photos/pub/open.txt", data=b"open").status_code == 201, "put a public blob")
    check(requests.get(BASE + "/v1/blobs/photos/pub/open.txt").content == b"open", "anonymous read of a public prefix")
    check(requests.get(BASE + "/v1/blobs/photos/note.txt").status_code == 401, "the rest stays closed")
    # The lifecycle editor saves through /v1/admin/buckets/B/lifecycle, as the API reads it back.
    rules = '{"rules": [{"id": "tmp-7d", "status": "Enabled", "prefix": "tmp/", "expiration_days": 7}]}'
    area = css(driver, "#setting-lifecycle")[0]
    area.clear()
    area.send_keys(rules)
    click(area.find_element(By.XPATH, "./ancestor::form//button[@type='submit']"))
    wait(driver, lambda d: css(d, "#setting-lifecycle-status")[0].text == "Saved.", "lifecycle rules saved from the page")
    stored = api("GET", "/v1/admin/buckets/photos/lifecycle").json()
    check(stored["rules"][0]["id"] == "tmp-7d" and stored["rules"][0]["expiration_days"] == 7, f"lifecycle as stored: {stored}")
    accessible(driver, "bucket settings")
    shot(driver, "bucket-settings")
    go(driver, "#/o/photos/pub/open.txt")
    wait(driver, lambda d: css(d, "#public-url"), "plain URL of a public blob")
    check(css(driver, "#status")[0].text.endswith("ready"), f"status line: {css(driver, '#status')[0].text}")
    step("admin made a key that works; public prefixes set from the page")


def main():
    os.makedirs(OUT, exist_ok=True)
    video = make_video()
    seed()
    seed_previews(video)
    step("seeded 3,000 keys, a video, a PDF and texts")
    driver = browser()
    try:
        driver.get(BASE + "/ui/")
        wait(driver, lambda d: css(d, "#token") and css(d, "#token")[0].is_displayed(), "login form")
        accessible(driver, "login")
        shot(driver, "login")
        keyboard(driver)
        login(driver, BASE, ADMIN)
        check(css(driver, "#principal")[0].text == "key:" or css(driver, "#principal")[0].text, "principal")
        browse(driver)
        upload_and_resume(driver)
        upload_controls(driver)
        preview(driver)
        delete(driver)
        read_only(driver)
        share(driver)
        admin_key(driver)
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"]
                  and "Failed to load resource" not in e["message"]]
        check(not errors, f"browser console errors: {errors}")
    except Exception:
        shot(driver, "failure")
        print(driver.execute_script("return document.body.innerText")[:3000], file=sys.stderr)
        raise
    finally:
        driver.quit()
    step("all steps passed")


if __name__ == "__main__":
    main()
