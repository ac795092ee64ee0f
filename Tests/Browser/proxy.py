"""A TCP proxy the browser test can cut: every connection through it closes at once when
`cut()` is called (or, armed, once `limit` bytes went upstream), like a lost network. `drop()`
closes the open connections (and, for a moment, new ones), then accepts again, and `rate`
(bytes a second upstream) makes an upload slow enough to pause or cancel it halfway."""
import socket, threading, time


class CuttableProxy:
    def __init__(self, upstream_port, port=0):
        self.upstream = ("127.0.0.1", upstream_port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.sockets, self.lock = [], threading.Lock()
        self.sent, self.limit, self.rate, self.closed = 0, None, None, threading.Event()
        self.refuse_until = 0
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if time.monotonic() < self.refuse_until:
                client.close()
                continue
            server = socket.create_connection(self.upstream)
            with self.lock:
                self.sockets += [client, server]
            threading.Thread(target=self.pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(server, client, False), daemon=True).start()

    def pump(self, source, target, upstream):
        try:
            while True:
                data = source.recv(1 << 16)
                if not data:
                    break
                target.sendall(data)
                if upstream and self.rate:
                    time.sleep(len(data) / self.rate)
                if upstream:
                    with self.lock:
                        self.sent += len(data)
                        over = self.limit is not None and self.sent >= self.limit
                    if over:
                        self.cut()
                        return
        except OSError:
            pass
        finally:
            for s in (source, target):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def drop(self, outage=0):
        """Closes every open connection; new ones are closed at once for `outage` seconds, then
        accepted again (longer than a browser's own silent retry of the request)."""
        self.refuse_until = time.monotonic() + outage
        with self.lock:
            sockets, self.sockets = self.sockets, []
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def cut(self):
        """Closes the listener and every connection."""
        self.closed.set()
        with self.lock:
            sockets, self.sockets = self.sockets, []
        for s in [self.listener] + sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
