import Foundation
import LiveBlobd
import Testing

/// README.md says what the code is: its Layout names the modules there are, its file names
/// the release, its first lines tell a newcomer how to get in (issue 35, items 13 and 15).
@Suite struct ReadmeTests {
    /// README.md's text.
    static func readme() throws -> String {
        try String(contentsOf: DeployTests.root.appendingPathComponent("README.md"), encoding: .utf8)
    }

    /// The text of the section under `heading` (a `## ` or `### ` line), up to the next heading
    /// of the same or a higher level (a `#` line inside a code block is no heading).
    static func section(_ heading: String, of text: String) throws -> String {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0 == heading }, "README has no \(heading)")
        let level = heading.prefix { $0 == "#" }.count
        var inCode = false
        var end = lines.endIndex
        for index in lines.indices.dropFirst(start + 1) {
            if lines[index].hasPrefix("```") { inCode.toggle() }
            let hashes = lines[index].prefix { $0 == "#" }.count
            if !inCode, (1...level).contains(hashes), lines[index].dropFirst(hashes).hasPrefix(" ") {
                end = index
                break
            }
        }
        return "\n" + lines[(start + 1)..<end].joined(separator: "\n") + "\n"
    }

    /// The fenced code blocks of `text` whose info string is `language`, in order.
    static func codeBlocks(_ language: String, in text: String) -> [String] {
        text.components(separatedBy: "\n```" + language + "\n").dropFirst().compactMap {
            $0.components(separatedBy: "\n```").first
        }
    }

    /// The modules the Layout section names: `Sources/NAME` at the start of a line, or
    /// `Sources/A, B, C` for several.
    static func layoutModules(_ readme: String) throws -> [String] {
        let block = try #require(codeBlocks("", in: try section("## Layout", of: readme)).first)
        let line = #/^Sources/([A-Za-z0-9]+(?:, [A-Za-z0-9]+)*)\s/#
        return block.split(separator: "\n").flatMap { text -> [String] in
            guard let match = try? line.prefixMatch(in: String(text)) else { return [] }
            return match.output.1.components(separatedBy: ", ")
        }
    }

    @Test func layoutNamesExactlyTheModules() throws {
        let named = try Self.layoutModules(try Self.readme())
        let sources = DeployTests.root.appendingPathComponent("Sources").path
        let modules = try FileManager.default.contentsOfDirectory(atPath: sources).filter { name in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: sources + "/" + name, isDirectory: &isDirectory) && isDirectory.boolValue
        }
        #expect(named.count == Set(named).count, "each module once: \(named)")
        #expect(Set(named).subtracting(modules).sorted() == [], "named in Layout but not in Sources/")
        #expect(Set(modules).subtracting(named).sorted() == [], "in Sources/ but not named in Layout")
    }

    /// README's first lines say that `make run`'s open access needs no token, and how to get
    /// one otherwise (issue 35, item 13); both ways they show work as written.
    @Test func firstLinesSayHowToGetAToken() throws {
        let readme = try Self.readme()
        let intro = String(readme[..<(readme.range(of: "\n## ")?.lowerBound ?? readme.endIndex)])
        #expect(intro.contains("`make run` starts blobd in open access") && intro.contains("the page needs no token"))
        let lines = try #require(Self.codeBlocks("sh", in: intro).first).split(separator: "\n").filter { !$0.hasPrefix("#") }
        let (tokensLine, keyLine) = (try #require(lines.first), try #require(lines.dropFirst().first))
        let dir = TempDir()
        let binaries = URL(fileURLWithPath: blobdExecutable()).deletingLastPathComponent().path
        let shell = { (command: String, environment: [String]) in
            try run("/usr/bin/env", ["PATH=\(binaries):/usr/bin:/bin"] + environment + ["/bin/bash", "-c", "cd \"$1\" && " + command, "-", dir.path])
        }
        #expect(try shell(String(tokensLine), []).status == 0)
        let checked = try run(blobdExecutable(), ["check-config", "--tokens-file", dir.path + "/tokens"])
        #expect(checked.status == 0 && String(decoding: checked.stdout, as: UTF8.self).contains(": 1 bearer tokens"), "\(checked.stderr)")
        let admin = try #require(try String(contentsOfFile: dir.path + "/tokens", encoding: .utf8).split(separator: " ").first)
        let blobd = try BlobdProcess(["--tokens-file", dir.path + "/tokens"])
        let me = try curl(["-H", "Authorization: Bearer \(admin)", blobd.baseURL + "/v1/whoami"])
        #expect(me.status == 200 && me.text.contains(#""name":"me""#), "\(me.text)")
        let made = try shell(keyLine.replacingOccurrences(of: "ADMIN-TOKEN", with: String(admin)), ["BLOBD_URL=\(blobd.baseURL)"])
        let printed = String(decoding: made.stdout, as: UTF8.self)
        #expect(made.status == 0, "\(made.stderr)")
        let token = try #require(printed.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("blobd_") }, "\(printed)")
        #expect(try curl(["-X", "PUT", "-H", "Authorization: Bearer \(token)", "--data-binary", "x", blobd.baseURL + "/v1/blobs/photos/a"]).status == 201)
    }

    /// The Grants section's example tokens file is one blobd takes.
    @Test func grantsExampleIsAValidTokensFile() throws {
        let grants = try Self.section("### Grants", of: try Self.readme())
        let example = try #require(Self.codeBlocks("text", in: grants).first { $0.contains("AKIDPHOTOS") })
        let dir = TempDir()
        let file = dir.file("tokens", Array((example + "\n").utf8))
        chmod(file, 0o600)
        let checked = try run(blobdExecutable(), ["check-config", "--tokens-file", file])
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(String(decoding: checked.stdout, as: UTF8.self).contains(": 1 bearer tokens, 2 S3 keys"))
    }

    /// The .deb README tells to install is the one `make dist` makes of this release.
    @Test func debNameIsTheRelease() throws {
        let version = String(decoding: try run(blobdExecutable(), ["--version"]).stdout, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(version == "1.2.0")
        let readme = try Self.readme()
        let debs = readme.matches(of: #/dist/blobd_([0-9.]+)_amd64\.deb/#).map { String($0.output.1) }
        #expect(!debs.isEmpty && debs.allSatisfy { $0 == version }, "\(debs)")
    }

    /// The "Not implemented" paragraph names nothing blobd does: no lifecycle, CORS, Object
    /// Lock, POST Object or versioning (each has its own section).
    @Test func notImplementedNamesNothingImplemented() throws {
        let s3 = try Self.section("## S3", of: try Self.readme())
        let start = try #require(s3.range(of: "\nNot implemented")).lowerBound
        let paragraph = s3[start...].components(separatedBy: "\n\n").first ?? ""
        for implemented in ["lifecycle,", "CORS", "object lock", "Object Lock,", "POST object uploads", "versioning"] {
            #expect(!paragraph.contains(implemented), "'\(implemented)' is listed as not implemented")
        }
    }
}
