import Foundation
import Synchronization
import Testing

/// Where the built `blobd` is: `$BLOBD_BIN`, else next to the test bundle in the build folder.
public func blobdExecutable() -> String {
    if let path = ProcessInfo.processInfo.environment["BLOBD_BIN"] { return path }
    let testBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    var folder = URL(fileURLWithPath: testBinary).deletingLastPathComponent()
    // The xctest bundle may be a directory holding the binary.
    while !FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("blobd").path), folder.path != "/" {
        folder.deleteLastPathComponent()
    }
    return folder.appendingPathComponent("blobd").path
}

/// A fresh temporary directory, removed on deinit.
public final class TempDir: Sendable {
    public let path: String
    public init(_ name: String = "blobd-e2e") {
        path = NSTemporaryDirectory() + "\(name)-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `bytes` to a file in the directory and returns its path.
    public func file(_ name: String, _ bytes: [UInt8]) -> String {
        let file = path + "/" + name
        _ = FileManager.default.createFile(atPath: file, contents: Data(bytes))
        return file
    }
}

public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The real `blobd`, launched on 127.0.0.1:0 with a temp data dir, killed on deinit.
public final class BlobdProcess: @unchecked Sendable {
    public let process = ChildProcess()
    public let dataDir: String
    public let port: Int
    private let ownedDir: TempDir?
    /// blobd's stderr goes to a file, not a pipe: a pipe whose reader falls behind fills up,
    /// and blobd then drops log lines after waiting for room (which a test would take for lost
    /// lines); a file never pushes back.
    private let stderrFile = TempDir("blobd-stderr")

    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public var pid: Int32 { process.processIdentifier }

    /// Starts blobd and waits for its `blobd listening on` line.
    public init(_ arguments: [String] = [], environment: [String: String] = [:], dataDir: String? = nil) throws {
        let owned = dataDir == nil ? TempDir("blobd-data") : nil
        ownedDir = owned
        self.dataDir = dataDir ?? (owned?.path ?? "/tmp") + "/data"
        process.executableURL = URL(fileURLWithPath: blobdExecutable())
        process.arguments = ["--data-dir", self.dataDir, "--listen", "127.0.0.1:0"] + arguments
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BLOBD_") }
            .merging(environment) { $1 }
        let stderrPath = stderrFile.path + "/stderr.log"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        let stderrHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        process.standardError = stderrHandle
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        try? stderrHandle.close()  // the child has its own copy
        let deadline = Date().addingTimeInterval(30)
        var found: Int?
        while found == nil && Date() < deadline && process.isRunning {
            let text = Self.read(stderrPath)
            found = text.range(of: "blobd listening on http://127.0.0.1:").flatMap { range in
                Int(text[range.upperBound...].prefix { $0.isNumber })
            }
            if found == nil { usleep(5_000) }
        }
        guard let found else {
            if process.isRunning { process.terminate() }
            throw TestFailure("blobd did not start: \(Self.read(stderrPath))")
        }
        port = found
    }

    /// Everything blobd wrote to stderr so far.
    public var stderr: String { Self.read(stderrFile.path + "/stderr.log") }

    private static func read(_ path: String) -> String {
        String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
    }

    /// The S3 listener's port (started with `--s3-listen 127.0.0.1:0`), once it has said so.
    public var s3Port: Int? {
        var port: Int?
        eventually(within: 10) {
            port = stderr.range(of: "blobd S3 listening on http://127.0.0.1:").flatMap { range in
                Int(stderr[range.upperBound...].prefix { $0.isNumber })
            }
            return port != nil
        }
        return port
    }

    /// Sends `signal` and waits (bounded) for exit; returns the exit status, nil if still running.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, timeout: Double = 30) -> Int32? {
        if process.isRunning { kill(process.processIdentifier, signal) }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        guard !process.isRunning else { return nil }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// Runs a program to completion (bounded) and returns its exit status, stdout and stderr.
@discardableResult
public func run(_ executable: String, _ arguments: [String], stdin: [UInt8]? = nil, timeout: Double = 120) throws -> (status: Int32, stdout: [UInt8], stderr: String) {
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let out = TempDir("blobd-run")
    let outPath = out.path + "/out", errPath = out.path + "/err"
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    process.standardOutput = FileHandle(forWritingAtPath: outPath)
    process.standardError = FileHandle(forWritingAtPath: errPath)
    let input = Pipe()
    process.standardInput = stdin == nil ? FileHandle.nullDevice : input
    try process.run()
    if let stdin {
        input.fileHandleForWriting.write(Data(stdin))
        try input.fileHandleForWriting.close()
    }
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(2_000) }
    if process.isRunning {
        process.terminate()
        usleep(500_000)
        process.stop()  // reaped: no zombie outlives the test
        throw TestFailure("\(executable) \(arguments) timed out")
    }
    let stdoutBytes = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data())
    let stderrText = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
    return (process.terminationStatus, stdoutBytes, stderrText)
}

/// Runs a program that leaves daemons behind (pg_ctl, tools/ceph-local.sh), through Python's
/// subprocess, which closes every other descriptor in the child: Foundation's `Process` learns
/// of an exit when a descriptor it shares with the child closes, and a daemon would hold it.
@discardableResult
public func runLeavingDaemons(_ argv: [String], timeout: Double = 120) throws -> (status: Int32, stdout: [UInt8], stderr: String) {
    try run("/usr/bin/python3", ["-c", "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"] + argv, timeout: timeout)
}

/// Regular files anywhere under `path` (e.g. a data dir's `blobs/`, which holds 256 folders).
public func files(under path: String) -> [String] {
    let enumerator = FileManager.default.enumerator(atPath: path)
    var found: [String] = []
    while let name = enumerator?.nextObject() as? String {
        if (enumerator?.fileAttributes?[.type] as? FileAttributeType) == .typeRegular { found.append(name) }
    }
    return found
}
