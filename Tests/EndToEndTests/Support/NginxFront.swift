import Foundation
import LiveBlobd
import Testing

/// A TCP port on 127.0.0.1 that was free a moment ago (for servers that cannot take port 0).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw TestFailure("bind: errno \(errno)") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// nginx as a TLS front, configured from one of deploy/nginx's files with only its addresses,
/// certificate paths and upstream port changed; a fresh self-signed certificate for
/// 127.0.0.1. Started in the foreground, stopped by its PID.
final class NginxFront: @unchecked Sendable {
    let process = ChildProcess()
    let port: Int
    /// The certificate clients should trust (PEM).
    let certificate: String
    let dir = TempDir("blobd-nginx")

    init(deployFile: String, upstreamPort: Int) throws {
        let conf = try String(contentsOf: DeployTests.root.appendingPathComponent("deploy/nginx/" + deployFile), encoding: .utf8)
        certificate = dir.path + "/cert.pem"
        let key = dir.path + "/key.pem"
        let made = try run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                                "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                                                "-keyout", key, "-out", certificate])
        guard made.status == 0 else { throw TestFailure("openssl: \(made.stderr)") }
        port = try freePort()
        var lines: [String] = []
        for line in conf.split(separator: "\n", omittingEmptySubsequences: false) {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("listen [::]") { continue }
            if text.hasPrefix("listen 443") { lines.append("    listen 127.0.0.1:\(port) ssl;"); continue }
            if text.hasPrefix("ssl_certificate ") { lines.append("    ssl_certificate \(certificate);"); continue }
            if text.hasPrefix("ssl_certificate_key ") { lines.append("    ssl_certificate_key \(key);"); continue }
            if text.hasPrefix("server 127.0.0.1:") { lines.append("    server 127.0.0.1:\(upstreamPort);"); continue }
            lines.append(String(line))
        }
        let site = dir.file("site.conf", Array(lines.joined(separator: "\n").utf8))
        let main = """
            daemon off;
            worker_processes 1;
            pid \(dir.path)/nginx.pid;
            error_log \(dir.path)/error.log warn;
            events { worker_connections 256; }
            http {
                access_log off;
                client_body_temp_path \(dir.path)/body;
                proxy_temp_path \(dir.path)/proxy;
                fastcgi_temp_path \(dir.path)/fastcgi;
                uwsgi_temp_path \(dir.path)/uwsgi;
                scgi_temp_path \(dir.path)/scgi;
                include \(site);
            }
            """
        let config = dir.file("nginx.conf", Array(main.utf8))
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-p", dir.path, "-c", config, "-e", dir.path + "/error.log"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let port = port
        guard eventually(within: 10, { (try? RawConnection(port: port)) != nil }) else {
            let log = (try? String(contentsOfFile: dir.path + "/error.log", encoding: .utf8)) ?? ""
            stop()
            throw TestFailure("nginx did not start: \(log)")
        }
    }

    /// Stops nginx (its master, which stops its worker) by PID.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    deinit { stop() }
}
