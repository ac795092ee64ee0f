"""A webhook receiver for blobd's event tests: verifies every Standard Webhooks signature with
the `standardwebhooks` package and appends one JSON line per delivery to LOG:
{"id": webhook-id, "ok": signature verified, "payload": the body}. Answers 204, or 400 for a bad
signature. Usage: receiver.py PORT SECRET LOG [FAIL_EVERY_N]"""
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from standardwebhooks.webhooks import Webhook

port, secret, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
fail_every = int(sys.argv[4]) if len(sys.argv) > 4 else 0
hook = Webhook(secret)
lock = threading.Lock()
count = [0]

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            hook.verify(body, headers)
            ok = True
        except Exception:
            ok = False
        with lock:
            count[0] += 1
            refuse = fail_every and count[0] % fail_every == 0
            if not refuse:
                with open(log, "a") as f:
                    f.write(json.dumps({"id": headers.get("webhook-id"), "ok": ok, "payload": body.decode()}) + "\n")
        self.send_response(400 if not ok else (503 if refuse else 204))
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
print("ready", flush=True)
server.serve_forever()
