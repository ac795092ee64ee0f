import Foundation
import LiveBlobd
import Testing

/// A real browser (Debian's headless Chromium through Selenium) on a page of another origin:
/// blobd allows `http://127.0.0.1:*`, so the page served from 127.0.0.1 uploads by fetch PUT,
/// by a small tus client, by a presigned S3 PUT and by a presigned POST form, reads ETag and
/// Upload-Offset, and downloads a range; a plain HTML form (a file picker, no script) posts to
/// S3 and is redirected back; the same page served as `localhost` is blocked.
@Suite struct BrowserCORSTests {
    static let script = """
        import hashlib, threading, http.server, functools, tempfile, time
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        page_dir = tempfile.mkdtemp()
        open(page_dir + "/page.html", "w").write("<!doctype html><title>cross-origin</title><p>page</p>")
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=page_dir)
        handler.log_message = lambda *a: None
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        page_port = server.server_address[1]
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        driver.set_script_timeout(60)
        TUS = '''
            const [base, token, key, text, done] = arguments;
            const auth = {"Authorization": "Bearer " + token};
            const body = new TextEncoder().encode(text);
            const half = Math.floor(body.length / 2);
            (async () => {
              let r = await fetch(base + "/v1/uploads", {method: "POST", headers: Object.assign({"Tus-Resumable": "1.0.0",
                "Upload-Length": String(body.length), "Upload-Metadata": "key " + btoa(key)}, auth)});
              const url = new URL(r.headers.get("Location"), base).href;
              const offsets = [];
              for (const part of [body.slice(0, half), body.slice(half)]) {
                const head = await fetch(url, {method: "HEAD", headers: Object.assign({"Tus-Resumable": "1.0.0"}, auth)});
                const offset = head.headers.get("Upload-Offset");
                r = await fetch(url, {method: "PATCH", body: part, headers: Object.assign({"Tus-Resumable": "1.0.0",
                  "Upload-Offset": offset, "Content-Type": "application/offset+octet-stream"}, auth)});
                offsets.push([offset, r.status, r.headers.get("Upload-Offset")]);
              }
              done({created: url, offsets});
            })().catch(e => done({error: String(e)}));
        '''
        CALL = '''
            const [url, method, headers, text, done] = arguments;
            fetch(url, {method, headers, body: text === null ? undefined : text})
              .then(async r => done({status: r.status, etag: r.headers.get("ETag"), range: r.headers.get("Content-Range"),
                                     body: await r.text()}))
              .catch(e => done({error: String(e)}));
        '''
        FORM = '''
            const [url, fields, text, done] = arguments;
            const form = new FormData();
            for (const [k, v] of Object.entries(fields)) form.append(k, v);
            form.append("file", new Blob([text], {type: "text/plain"}), "from-browser.txt");
            fetch(url, {method: "POST", body: form})
              .then(r => done({status: r.status, etag: r.headers.get("ETag")})).catch(e => done({error: String(e)}));
        '''
        try:
            driver.get("http://127.0.0.1:%d/page.html" % page_port)
            token = "admin-token-0123"
            auth = {"Authorization": "Bearer " + token}
            r = driver.execute_async_script(CALL, V1 + "/v1/blobs/plain/web.txt", "PUT", auth, "hello from a page")
            check(r.get("status") == 201 and r["etag"], "fetch PUT: %r" % r)
            r = driver.execute_async_script(CALL, V1 + "/v1/blobs/plain/web.txt", "GET", dict(auth, Range="bytes=6-9"), None)
            check(r == {"status": 206, "etag": r.get("etag"), "range": "bytes 6-9/17", "body": "from"}, "range download: %r" % r)
            r = driver.execute_async_script(TUS, V1, token, "plain/tus.txt", "resumable upload through tus from a page")
            check(r.get("offsets") == [["0", 204, "20"], ["20", 204, "40"]], "tus: %r" % r)
            url = admin.generate_presigned_url("put_object", Params={"Bucket": "plain", "Key": "presigned.txt"}, ExpiresIn=300)
            r = driver.execute_async_script(CALL, url, "PUT", {}, "presigned")
            check(r.get("status") == 200 and r["etag"] == '"%s"' % hashlib.md5(b"presigned").hexdigest(), "presigned PUT: %r" % r)
            p = admin.generate_presigned_post("plain", "forms/${filename}", Conditions=[["starts-with", "$key", "forms/"],
                                              ["content-length-range", 1, 100]])
            r = driver.execute_async_script(FORM, p["url"], p["fields"], "form body")
            check(r.get("status") == 204 and r["etag"], "form upload: %r" % r)
            r = driver.execute_async_script(FORM, p["url"], p["fields"], "x" * 101)
            check(r.get("status") == 400, "form over its range: %r" % r)
            # A plain HTML form (no script sends it): the browser posts the file, S3 redirects back to the page.
            done = "http://127.0.0.1:%d/page.html" % page_port
            p2 = admin.generate_presigned_post("plain", "plain-form/${filename}", Fields={"success_action_redirect": done},
                                               Conditions=[["starts-with", "$key", "plain-form/"], {"success_action_redirect": done}])
            driver.execute_script('''
                const [url, fields] = arguments;
                const form = document.createElement("form");
                Object.assign(form, {action: url, method: "post", enctype: "multipart/form-data", id: "upload"});
                for (const [k, v] of Object.entries(fields)) {
                  const input = Object.assign(document.createElement("input"), {type: "hidden", name: k, value: v});
                  form.append(input);
                }
                form.append(Object.assign(document.createElement("input"), {type: "file", name: "file", id: "file"}));
                document.body.append(form);''', p2["url"], p2["fields"])
            upload_path = page_dir + "/chosen.txt"
            open(upload_path, "wb").write(b"chosen in a file picker")
            driver.find_element("id", "file").send_keys(upload_path)
            driver.find_element("id", "upload").submit()
            deadline = time.monotonic() + 20
            while "etag=" not in driver.current_url and time.monotonic() < deadline:
                time.sleep(0.05)
            check(driver.current_url.startswith(done + "?bucket=plain&key=plain-form/chosen.txt&etag=%22"), "redirected: " + driver.current_url)
            for key, body in (("plain-form/chosen.txt", b"chosen in a file picker"), ("web.txt", b"hello from a page"), ("tus.txt", b"resumable upload through tus from a page"),
                              ("presigned.txt", b"presigned"), ("forms/from-browser.txt", b"form body")):
                check(admin.get_object(Bucket="plain", Key=key)["Body"].read() == body, "stored " + key)
            # The same page from an origin blobd does not allow: the browser refuses the answers.
            driver.get("http://localhost:%d/page.html" % page_port)
            r = driver.execute_async_script(CALL, V1 + "/v1/blobs/plain/web.txt", "GET", auth, None)
            check("error" in r and "Failed to fetch" in r["error"], "blocked GET: %r" % r)
            r = driver.execute_async_script(CALL, V1 + "/v1/blobs/plain/blocked.txt", "PUT", auth, "no")
            check("error" in r, "blocked PUT: %r" % r)
            r = driver.execute_async_script(FORM, p["url"], p["fields"], "blocked")
            check("error" in r, "blocked form: %r" % r)
            check(error(lambda: admin.head_object(Bucket="plain", Key="blocked.txt")) == ("404", 404), "the preflight stopped the PUT")
        finally:
            driver.quit()
            server.shutdown()
        """

    @Test(.timeLimit(.minutes(2))) func crossOriginPage() throws {
        try CORSTests.python(["--cors-origin", "http://127.0.0.1:*"], Self.script)
    }
}
