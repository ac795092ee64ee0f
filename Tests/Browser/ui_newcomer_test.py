"""The web page as a newcomer finds it (issue 35, items 13, 14 and 17), one step per run:
    python3 ui_newcomer_test.py STEP     STEP: open-access, tokens-file, new-bucket, multi-upload,
                                         folder-markers, versions
Environment: BASE (blobd's /v1 URL), S3 (its S3 URL, or ""), OUT (screenshots), WORK (temp dir),
ADMIN and READER (tokens, "-" in open access). Prints one line per step; exits non-zero on the
first failure, after a screenshot `newcomer-failure-STEP`."""
import os, sys, time
import requests
from selenium.webdriver.common.by import By

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from page_helpers import ADMIN, BASE, OUT, WORK, accessible, browser, check, click, css, go, login, shot, step, wait  # noqa: E402

S3 = os.environ.get("S3", "")


def call(method, path, token=None, **kw):
    """A /v1 request, with a bearer token only when given (open access knows no token)."""
    headers = kw.pop("headers", {})
    if token:
        headers["Authorization"] = "Bearer " + token
    return requests.request(method, BASE + path, headers=headers, timeout=60, **kw)


def visible(driver, selector):
    return any(e.is_displayed() for e in css(driver, selector))


def rows(driver):
    """The folder table's rows: (data-key, name text, type text)."""
    return driver.execute_script("""return [...document.querySelectorAll('#rows tr')].map((tr) =>
        [tr.dataset.key, tr.querySelector('td.name').textContent, tr.children[3].textContent])""")


def uploads_done(driver, count):
    states = [e.text for e in css(driver, "#uploads-list .upload-status")]
    return len(states) == count and all(s.startswith("done") for s in states)


def open_access(driver):
    """No tokens file: the page opens without a token, says so, browses and uploads."""
    check(call("PUT", "/v1/buckets/photos").status_code == 201, "bucket photos")
    check(call("PUT", "/v1/blobs/photos/hello.txt", data=b"hello\n", headers={"Content-Type": "text/plain"}).status_code == 201, "hello.txt")
    driver.get(BASE + "/ui/")
    wait(driver, lambda d: visible(d, "#open-access"), "the open-access note")
    check(not visible(driver, "#login-view") and not visible(driver, "#token"), "no login form in open access")
    check(css(driver, "#open-access")[0].text == "Open access: no token needed", f"note: {css(driver, '#open-access')[0].text}")
    check(not visible(driver, "#logout"), "nothing to log out of")
    wait(driver, lambda d: [a.text for a in css(d, ".buckets a.folder")] == ["photos"], "the bucket listed")
    accessible(driver, "open access")
    shot(driver, "open-access")
    click(css(driver, ".buckets a[href='#/b/photos/']")[0])
    wait(driver, lambda d: any(r[0] == "photos/hello.txt" for r in rows(d)), "photos/ listed")
    path = os.path.join(WORK, "from-page.txt")
    with open(path, "wb") as f:
        f.write(b"uploaded without a token\n")
    css(driver, "#file-input")[0].send_keys(path)
    wait(driver, lambda d: uploads_done(d, 1), "the upload done")
    wait(driver, lambda d: any(r[0] == "photos/from-page.txt" for r in rows(d)), "the new blob listed")
    check(call("GET", "/v1/blobs/photos/from-page.txt").content == b"uploaded without a token\n", "stored")
    go(driver, "#/o/photos/hello.txt")
    wait(driver, lambda d: css(d, "#preview-text"), "the text preview")
    check(css(driver, "#preview-text")[0].text == "hello", f"preview: {css(driver, '#preview-text')[0].text!r}")
    link = css(driver, "a#download")[0].get_attribute("href")
    check(requests.get(link).content == b"hello\n", "the download link works")
    shot(driver, "open-access-upload")
    driver.refresh()
    wait(driver, lambda d: visible(d, "#open-access") and css(d, "#preview-text"), "still open after a reload")
    step("open access: no login, a note saying so, browsed, uploaded and downloaded without a token")


def tokens_file(driver):
    """With a tokens file the page still asks for a token, and says nothing of open access. Its
    `anonymous read:photos` line lets a visitor go on without a token, read-only."""
    check(call("PUT", "/v1/buckets/photos", token=ADMIN).status_code == 201, "bucket photos")
    check(call("PUT", "/v1/blobs/photos/hello.txt", token=ADMIN, data=b"hello\n").status_code == 201, "hello.txt")
    driver.get(BASE + "/ui/")
    wait(driver, lambda d: visible(d, "#token"), "the login form")
    check(not visible(driver, "#open-access"), "no open-access note")
    check(css(driver, "#anonymous")[0].text == "Without a token you may: read:photos\nContinue without a token", css(driver, "#anonymous")[0].text)
    accessible(driver, "login with anonymous grants")
    shot(driver, "login-anonymous")
    css(driver, "#token")[0].send_keys("not-a-token")
    click(css(driver, "#login-form button[type='submit']")[0])
    wait(driver, lambda d: css(d, "#login-error")[0].text == "That token is not valid.", "an unknown token refused")
    click(css(driver, "#anonymous-continue")[0])
    wait(driver, lambda d: css(d, "#principal")[0].text == "anonymous", "in without a token")
    check(not visible(driver, "#open-access") and css(driver, "#logout")[0].text == "Log in", "a way to log in")
    go(driver, "#/b/photos/")
    wait(driver, lambda d: [r[0] for r in rows(d)] == ["photos/hello.txt"], "photos/ listed without a token")
    check(not css(driver, "#file-input") and not css(driver, "#delete-selected"), "read-only")
    click(css(driver, "#logout")[0])
    wait(driver, lambda d: visible(d, "#token"), "the login form again")
    login(driver, BASE, ADMIN)
    check(not visible(driver, "#open-access") and css(driver, "#logout")[0].text == "Log out", "logged in with the token")
    step("tokens file: the login asks for a token, refuses an unknown one, takes a known one; anonymous grants browse read-only")


def new_bucket(driver):
    """The root lists buckets from GET /v1/buckets (empty ones too); New bucket makes an S3 bucket
    and refuses an invalid name with a clear message."""
    check(call("PUT", "/v1/buckets/existing").status_code == 201, "an empty bucket")
    driver.get(BASE + "/ui/")
    wait(driver, lambda d: [a.text for a in css(d, ".buckets a.folder")] == ["existing"], "the empty bucket listed")
    click(css(driver, "#new-bucket")[0])
    wait(driver, lambda d: d.find_element(By.ID, "name-dialog").get_attribute("open") is not None, "the new bucket dialog")
    check(css(driver, "#name-title")[0].text == "New bucket", "its title")
    css(driver, "#name-input")[0].send_keys("My_Photos")
    click(css(driver, "#name-ok")[0])
    wait(driver, lambda d: css(d, "#name-error")[0].text, "an error for the invalid name")
    error = css(driver, "#name-error")[0].text
    check(error == "Use only lowercase letters, digits, dots (.) and hyphens (-): \"My_Photos\" has M, _ and P.", f"the error: {error}")
    check(css(driver, "#name-input")[0].get_attribute("aria-invalid") == "true", "the field marked invalid")
    accessible(driver, "new bucket")
    shot(driver, "new-bucket-invalid")
    for name, message in [("ab", "A bucket name is 3 to 63 characters long."),
                          ("-photos", "A bucket name starts and ends with a lowercase letter or a digit."),
                          ("my..photos", "A bucket name has no two dots in a row, and no dot next to a hyphen."),
                          ("10.0.0.1", "A bucket name may not look like an IP address.")]:
        css(driver, "#name-input")[0].clear()
        css(driver, "#name-input")[0].send_keys(name)
        click(css(driver, "#name-ok")[0])
        wait(driver, lambda d: css(d, "#name-error")[0].text == message, f"{name}: {message}")
    css(driver, "#name-input")[0].clear()
    css(driver, "#name-input")[0].send_keys("my-photos")
    click(css(driver, "#name-option")[0])
    click(css(driver, "#name-ok")[0])
    wait(driver, lambda d: "my-photos" in [a.text for a in css(d, ".buckets a.folder")], "the new bucket listed")
    check(css(driver, "#notice")[0].text == "Bucket my-photos made, with versioning.", f"notice: {css(driver, '#notice')[0].text}")
    made = call("GET", "/v1/buckets").json()["buckets"]
    check([b["name"] for b in made] == ["existing", "my-photos"] and made[1].get("versioning") == "Enabled", f"GET /v1/buckets: {made}")
    if S3:
        check(requests.head(S3 + "/my-photos", timeout=30).status_code == 200, "S3 HeadBucket sees it")
        check("<Name>my-photos</Name>" in requests.get(S3 + "/", timeout=30).text, "S3 ListBuckets shows it")
        check("<Status>Enabled</Status>" in requests.get(S3 + "/my-photos?versioning", timeout=30).text, "versioned for S3")
    row = [r.text for r in css(driver, ".buckets tr[data-bucket='my-photos'] td")]
    check(row[2] == "versioning on", f"the bucket's row: {row}")
    shot(driver, "buckets")
    check(call("PUT", "/v1/blobs/my-photos/a.txt", data=b"a").status_code == 201, "a blob in my-photos")
    for name, notice in [("my-photos", "Bucket my-photos is not empty: delete what it holds first."), ("existing", "Bucket existing deleted.")]:
        click(css(driver, f".buckets tr[data-bucket='{name}'] button.danger")[0])
        wait(driver, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is not None, f"confirm deleting {name}")
        click(css(driver, "#confirm-ok")[0])
        wait(driver, lambda d: css(d, "#notice")[0].text == notice, notice)
    check([a.text for a in css(driver, ".buckets a.folder")] == ["my-photos"], "existing gone from the list")
    if S3:
        check(requests.head(S3 + "/existing", timeout=30).status_code == 404, "S3 sees it gone")
    step("New bucket: invalid names refused in the dialog; my-photos made, versioned, seen by S3; "
         "an empty bucket deleted, a full one refused")


def multi_upload(driver):
    """Twelve files picked at once: each is listed once when they are all done, without a reload."""
    check(call("PUT", "/v1/buckets/many").status_code == 201, "bucket many")
    paths = []
    for i in range(12):
        paths.append(os.path.join(WORK, f"file{i:02d}.txt"))
        with open(paths[-1], "wb") as f:
            f.write(f"file {i}\n".encode())
    driver.get(BASE + "/ui/#/b/many/")
    wait(driver, lambda d: css(d, "#file-input") and css(d, "#count")[0].text == "0 entries", "the empty folder")
    css(driver, "#file-input")[0].send_keys("\n".join(paths))
    wait(driver, lambda d: uploads_done(d, 12), "twelve uploads done", timeout=60)
    expected = [f"many/file{i:02d}.txt" for i in range(12)]
    # The uploads' refreshes settle; a page that shows a row twice never gets to 12 entries.
    wait(driver, lambda d: css(d, "#count")[0].text == "12 entries" and [r[0] for r in rows(d)] == expected,
         f"each file listed once: {[r[0] for r in rows(driver)]}, {css(driver, '#count')[0].text}", timeout=15)
    shot(driver, "multi-upload")
    step("twelve files uploaded at once, each listed once without a reload")


def folder_markers(driver):
    """S3 folder markers (`dir/`, empty objects S3 tools make) are rows with a name, open to
    their details, and can be deleted."""
    check(call("PUT", "/v1/buckets/tree").status_code == 201, "bucket tree")
    for key in ["tree/dir%2F", "tree/empty%2F"]:
        check(call("PUT", "/v1/blobs/" + key, data=b"").status_code == 201, key)
    check(call("PUT", "/v1/blobs/tree/dir/inside.txt", data=b"inside\n").status_code == 201, "inside.txt")
    driver.get(BASE + "/ui/#/b/tree/")
    wait(driver, lambda d: [r[1] for r in rows(d)] == ["dir/", "empty/"], f"two folders: {rows(driver)}")
    go(driver, "#/b/tree/dir/")
    wait(driver, lambda d: len(rows(d)) == 2, "the marker and the blob")
    listed = rows(driver)
    check(listed == [["tree/dir/", "(folder marker)", "folder marker"], ["tree/dir/inside.txt", "inside.txt", "text/plain"]],
          f"rows: {listed}")
    check(all(name.strip() for _, name, _ in listed), "no nameless row")
    accessible(driver, "folder with a marker")
    shot(driver, "folder-marker")
    click(css(driver, "#rows tr[data-key='tree/dir/'] td.name a")[0])
    wait(driver, lambda d: css(d, "dd[data-fact='Key']") and css(d, "dd[data-fact='Key']")[0].text == "tree/dir/", "the marker's details")
    check(css(driver, "#view h2")[0].text == "dir/", f"heading: {css(driver, '#view h2')[0].text}")
    check(css(driver, "dd[data-fact='Size']")[0].text == "0 B (0 bytes)", "its size")
    go(driver, "#/b/tree/empty/")
    wait(driver, lambda d: [r[0] for r in rows(d)] == ["tree/empty/"], "the marker of an empty folder")
    click(css(driver, "#rows tr[data-key='tree/empty/'] input.select")[0])
    click(css(driver, "#delete-selected")[0])
    wait(driver, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is not None, "confirmation")
    click(css(driver, "#confirm-ok")[0])
    wait(driver, lambda d: css(d, "#notice")[0].text == "Deleted 1.", "deleted")
    check(call("HEAD", "/v1/blobs/tree/empty%2F").status_code == 404, "the marker is gone")
    step("folder markers: named rows, their details, deleted from the page")


def versions(driver):
    """A versioned blob's versions: listed newest first, an old one downloaded and restored,
    and a deleted blob restored from its versions."""
    check(call("PUT", "/v1/buckets/vers", json={"versioning": "Enabled"}).status_code == 201, "bucket vers")
    ids = []
    for text in ["one", "two", "three"]:
        r = call("PUT", "/v1/blobs/vers/doc.txt", data=(text + "\n").encode(), headers={"Content-Type": "text/plain", "Cache-Control": "max-age=60"})
        check(r.status_code in (200, 201), text)
        ids.append(r.headers["Blob-Version"])
    downloads = os.path.join(WORK, "downloads")
    os.makedirs(downloads, exist_ok=True)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    driver.get(BASE + "/ui/#/o/vers/doc.txt")
    version_rows = lambda d: [tr.get_attribute("data-version") for tr in css(d, "#version-rows tr")]
    wait(driver, lambda d: version_rows(d) == ids[::-1], f"three versions, newest first: {version_rows(driver)}")
    check(css(driver, "dd[data-fact='Version']")[0].text == ids[2], "the current version named")
    latest = css(driver, f"#version-rows tr[data-version='{ids[2]}']")[0].text
    check("latest" in latest and not css(driver, f"#version-rows tr[data-version='{ids[2]}'] button.restore"), f"latest: {latest}")
    accessible(driver, "versions")
    driver.execute_script("document.getElementById('versions').scrollIntoView()")
    shot(driver, "versions")
    click(css(driver, f"#version-rows tr[data-version='{ids[0]}'] button.download")[0])
    saved = os.path.join(downloads, "doc.txt")
    wait(driver, lambda d: os.path.exists(saved) and open(saved, "rb").read() == b"one\n", "the oldest version downloaded")
    click(css(driver, f"#version-rows tr[data-version='{ids[0]}'] button.restore")[0])
    wait(driver, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is not None, "restore confirmation")
    check(css(driver, "#confirm-text")[0].text.startswith(f"Restore version {ids[0]}"), css(driver, "#confirm-text")[0].text)
    click(css(driver, "#confirm-ok")[0])
    wait(driver, lambda d: len(version_rows(d)) == 4, "a fourth version, the restored copy")
    restored = call("GET", "/v1/blobs/vers/doc.txt")
    check(restored.content == b"one\n" and restored.headers["Content-Type"] == "text/plain" and restored.headers.get("Cache-Control") == "max-age=60",
          f"restored with its type and headers: {restored.headers}")
    check(version_rows(driver)[0] == restored.headers["Blob-Version"] and version_rows(driver)[1:] == ids[::-1], "the copy is the newest")
    check(css(driver, "#notice")[0].text == f"Restored version {ids[0]} as the current version.", css(driver, "#notice")[0].text)
    shot(driver, "versions-restored")
    check(call("DELETE", "/v1/blobs/vers/doc.txt").status_code == 204, "deleted (a delete marker)")
    driver.refresh()
    wait(driver, lambda d: len(version_rows(d)) == 5, "the delete marker listed")
    check(css(driver, "#notice")[0].text == "No current version: the blob was deleted. Restore one of its versions below.",
          css(driver, "#notice")[0].text)
    check("delete marker" in css(driver, "#version-rows tr")[0].text, "the marker is the newest")
    shot(driver, "versions-deleted")
    click(css(driver, f"#version-rows tr[data-version='{ids[2]}'] button.restore")[0])
    wait(driver, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is not None, "restore confirmation")
    click(css(driver, "#confirm-ok")[0])
    wait(driver, lambda d: call("GET", "/v1/blobs/vers/doc.txt").content == b"three\n", "the deleted blob restored")
    wait(driver, lambda d: css(d, "dd[data-fact='Key']"), "its details shown again")
    shot(driver, "versions-undeleted")
    step("versions: listed, downloaded, restored; a deleted blob restored")


STEPS = {"open-access": open_access, "tokens-file": tokens_file, "new-bucket": new_bucket, "multi-upload": multi_upload,
         "folder-markers": folder_markers, "versions": versions}


def main():
    name = sys.argv[1]
    os.makedirs(OUT, exist_ok=True)
    driver = browser()
    try:
        STEPS[name](driver)
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"]
                  and "Failed to load resource" not in e["message"]]
        check(not errors, f"browser console errors: {errors}")
    except Exception:
        shot(driver, "newcomer-failure-" + name)
        print(driver.execute_script("return document.body.innerText")[:3000], file=sys.stderr)
        raise
    finally:
        driver.quit()
    step(f"{name}: all steps passed")


if __name__ == "__main__":
    main()
