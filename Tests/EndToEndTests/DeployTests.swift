import Foundation
import LiveBlobd
import Testing

@Suite struct DeployTests {
    /// The repository root (this file is Tests/EndToEndTests/DeployTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `KEY=VALUE` lines of an environment file, as systemd reads them.
    static func environmentFile(_ path: String) throws -> [String: String] {
        var values: [String: String] = [:]
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            guard !text.hasPrefix("#"), let equals = text.firstIndex(of: "=") else { continue }
            values[String(text[..<equals])] = String(text[text.index(after: equals)...]).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return values
    }

    @Test func runsWithTheSystemdUnitsEnvironmentFile() throws {
        let unit = try String(contentsOf: Self.root.appendingPathComponent("deploy/blobd.service"), encoding: .utf8)
        let execStart = try #require(unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        let arguments = execStart.dropFirst("ExecStart=".count).split(separator: " ").dropFirst().map(String.init)
        var environment = try Self.environmentFile(Self.root.appendingPathComponent("deploy/blobd.env").path)
        #expect(environment["BLOBD_DATA_DIR"] != nil && environment["BLOBD_LISTEN"] != nil)
        // Only the paths and the port change for the test; every other setting is the file's.
        let dir = TempDir()
        environment["BLOBD_DATA_DIR"] = dir.path + "/data"
        environment["BLOBD_LISTEN"] = "127.0.0.1:0"
        let blobd = try BlobdProcess(arguments, environment: environment, dataDir: dir.path + "/data")
        #expect(try curl(["-X", "PUT", "--data-binary", "deployed", blobd.baseURL + "/v1/blobs/d"]).status == 201)
        #expect(try curl([blobd.baseURL + "/v1/blobs/d"]).text == "deployed")
        #expect(try curl([blobd.baseURL + "/healthz"]).status == 200)
        if environment["BLOBD_LOG_FORMAT"] == "json" {
            #expect(eventually { blobd.stderr.contains("\"msg\":\"request\"") })
        }
        #expect(blobd.stop() == 0)
    }
}
