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

    /// The runtime stage of deploy/Dockerfile: its instructions, `\`-continued lines joined,
    /// comments left out.
    static func dockerRuntimeStage() throws -> [String] {
        let text = try String(contentsOf: root.appendingPathComponent("deploy/Dockerfile"), encoding: .utf8)
        let instructions = text.replacingOccurrences(of: "\\\n", with: " ").split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
        let last = try #require(instructions.lastIndex { $0.hasPrefix("FROM ") })
        return Array(instructions[last...])
    }

    /// The `ENV` of the image's runtime stage, `NAME=VALUE` words.
    static func dockerEnvironment() throws -> [String: String] {
        var environment: [String: String] = [:]
        for line in try dockerRuntimeStage() where line.hasPrefix("ENV ") {
            for word in line.dropFirst(4).split(separator: " ") {
                guard let equals = word.firstIndex(of: "=") else { continue }
                environment[String(word[..<equals])] = String(word[word.index(after: equals)...])
            }
        }
        return environment
    }

    /// The image serves S3 as well as /v1 (issue 35, item 18): `BLOBD_S3_LISTEN=0.0.0.0:9000`,
    /// `EXPOSE 8080 9000`, and the `docker run` lines of both READMEs publish both ports on
    /// 127.0.0.1. No Docker here: blobd is started with the image's environment instead (its
    /// addresses moved to 127.0.0.1:0) and answers S3.
    @Test func theImageServesS3() throws {
        let stage = try Self.dockerRuntimeStage()
        let exposed = stage.filter { $0.hasPrefix("EXPOSE ") }.flatMap { $0.split(separator: " ").dropFirst().map(String.init) }
        #expect(exposed.sorted() == ["8080", "9000"], "\(exposed)")
        var environment = try Self.dockerEnvironment()
        #expect(environment["BLOBD_LISTEN"] == "0.0.0.0:8080" && environment["BLOBD_S3_LISTEN"] == "0.0.0.0:9000", "\(environment)")
        for file in ["README.md", "deploy/README.md"] {
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            let runs = text.split(separator: "\n").filter { $0.hasPrefix("docker run -d") }
            #expect(!runs.isEmpty && runs.allSatisfy { $0.contains("-p 127.0.0.1:8080:8080") && $0.contains("-p 127.0.0.1:9000:9000") },
                    "\(file): \(runs)")
        }
        let dir = TempDir()
        environment["BLOBD_DATA_DIR"] = dir.path + "/data"
        environment["BLOBD_S3_LISTEN"] = "127.0.0.1:0"
        environment["SWIFT_BACKTRACE"] = nil
        let blobd = try BlobdProcess([], environment: environment, dataDir: dir.path + "/data")
        let s3 = try #require(blobd.s3Port, "no S3 listener: \(blobd.stderr)")
        #expect(try curl(["-X", "PUT", "http://127.0.0.1:\(s3)/images"]).status == 200)
        #expect(try curl(["-X", "PUT", "--data-binary", "from s3", "http://127.0.0.1:\(s3)/images/a"]).status == 200)
        #expect(try curl([blobd.baseURL + "/v1/blobs/images/a"]).text == "from s3")
        #expect(blobd.stop() == 0)
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
