import Foundation
import LiveBlobd
import Testing

/// README's events example runs as written (issue 35, item 18): its shell lines and its Python
/// receiver, with only the two ports moved to free ones, and waits for each server it starts in
/// the background, as a person typing the lines does.
@Suite struct ReadmeEventsTests {
    /// The example's shell lines, each `\`-continued command on one line.
    static func commands(_ shell: String) -> [String] {
        shell.replacingOccurrences(of: "\\\n", with: " ").split(separator: "\n").map(String.init)
    }

    /// The script a test runs: the example's commands, a wait for the port of each one it starts
    /// in the background (`python3 …&` the receiver, `blobd …&`), and a wait for the event.
    static func script(_ shell: String, receiverPort: Int, blobdPort: Int) -> String {
        var lines = [
            "set -e",
            "exec >out.log",
            "trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT",
            // Polls with a deadline (10 s) until something accepts on 127.0.0.1:PORT.
            "wait_port() { for _ in $(seq 1000); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.01; done; "
                + "echo \"nothing listens on $1\" >&2; return 1; }",
        ]
        let background = #/&\s*(#.*)?$/#
        for command in commands(shell) {
            lines.append(command)
            guard (try? background.firstMatch(in: command)) != nil else { continue }
            let trimmed = command.trimmingCharacters(in: .whitespaces)
            lines.append("wait_port \(trimmed.hasPrefix("blobd") ? blobdPort : receiverPort)")
        }
        lines.append("for _ in $(seq 3000); do grep -q 'ObjectCreated:Put ' out.log && exit 0; sleep 0.01; done")
        lines.append("echo 'no event reached the receiver within 30 s' >&2; exit 1")
        return lines.joined(separator: "\n") + "\n"
    }

    @Test func theEventsExampleRunsAsWritten() throws {
        let section = try ReadmeTests.section("### Events", of: try ReadmeTests.readme())
        let shell = try #require(ReadmeTests.codeBlocks("sh", in: section).first)
        let receiver = try #require(ReadmeTests.codeBlocks("python", in: section).first)
        // The receiver listens where the webhook points, on neither blobd's port nor S3's.
        let port = try #require(receiver.firstMatch(of: #/HTTPServer\(\("127\.0\.0\.1", ([0-9]+)\)/#)).output.1
        #expect(shell.contains("=http://127.0.0.1:\(port)/"), "the webhook URL names the receiver's port \(port)")
        #expect(port != "8080" && port != "9000", "the receiver takes a port of blobd's")
        for command in Self.commands(shell) where command.hasPrefix("curl") {
            #expect(command.contains("-H \"Authorization: Bearer $ADMIN\""), "a curl without Authorization: \(command)")
        }
        let dir = TempDir()
        let (receiverPort, blobdPort) = (try freePort(), try freePort())
        _ = dir.file("receiver.py", Array(receiver.replacingOccurrences(of: "\"127.0.0.1\", \(port))", with: "\"127.0.0.1\", \(receiverPort))").utf8))
        let photo = testBytes(70_001, seed: 18)
        _ = dir.file("beach.jpg", photo)
        let moved = shell.replacingOccurrences(of: "127.0.0.1:\(port)", with: "127.0.0.1:\(receiverPort)")
            .replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(blobdPort)")
        _ = dir.file("example.sh", Array(Self.script(moved, receiverPort: receiverPort, blobdPort: blobdPort).utf8))
        let environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BLOBD_") }.map { "\($0.key)=\($0.value)" }
        let binaries = URL(fileURLWithPath: blobdExecutable()).deletingLastPathComponent().path
        let result = try run("/usr/bin/env", ["-i"] + environment + [
            "PATH=\(binaries):\(ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")",
            "BLOBD_LISTEN=127.0.0.1:\(blobdPort)", "BLOBD_DATA_DIR=\(dir.path)/data", "PYTHONUNBUFFERED=1",
            // The test process blocks most signals, and a child inherits that: the mask is
            // cleared first, so that the script's `kill` stops the receiver as it would a shell's.
            "python3", "-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.chdir(sys.argv[1]); "
                + "os.execv('/bin/bash', ['bash', './example.sh'])", dir.path,
        ], timeout: 60)
        let output = String(decoding: FileManager.default.contents(atPath: dir.path + "/out.log") ?? Data(), as: UTF8.self)
        #expect(result.status == 0, "\(result.stderr)\n\(output)")
        #expect(output.contains("ObjectCreated:Put images/beach.jpg \(sha256Hex(photo))\n"), "\(output)")
    }
}
