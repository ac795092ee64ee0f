import ArgumentParser
import HTTPCore
import Foundation
import OutboundHTTP

/// `blobd key ...`: keys made, listed, changed and revoked at run time through a running
/// blobd's `/v1/admin/keys`.
struct KeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Create, list, change and revoke keys through a running blobd (/v1/admin/keys).",
        discussion: """
            The admin token, one whose grants hold admin:*, comes from the environment variable BLOBD_TOKEN only \
            (a flag would show in ps). --url (BLOBD_URL; default http://127.0.0.1:8080) is blobd's /v1 listener over \
            plain HTTP; for a blobd behind TLS, run this on its host against its local address, or use the plain \
            http:// side of the TLS proxy. --json prints blobd's JSON answer as it came, for scripts.

            Exit status: 0 done; 1 blobd refused the request (400 a bad name or grant, 401 a token it does not know, \
            403 a token without admin:*, 404 no key with this id, 409 a tokens-file credential, which is read-only), \
            with its problem detail on stderr; 2 a usage error (a bad flag or URL, an https:// URL, no BLOBD_TOKEN) or \
            no usable answer (connection refused, timeout, not HTTP).
            """,
        subcommands: [KeyCreate.self, KeyList.self, KeyShow.self, KeyGrant.self, KeyRevoke.self])

    /// Runs one command's requests; a failure is printed on stderr and becomes the exit status.
    static func run(_ command: String, _ options: AdminOptions, _ body: (AdminKeysClient) throws(KeyCommandError) -> Void) throws {
        do {
            try body(try AdminKeysClient(options))
        } catch {
            printError("blobd key \(command): \(error)")
            throw ExitCode(error.exitCode)
        }
    }

    /// The JSON object of a 2xx answer; exit 2 when it is none.
    static func object(_ answer: HTTPClientResponse) throws(KeyCommandError) -> [String: Any] {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] else {
            throw .noAnswer("blobd answered \(answer.status) with a body that is not a JSON object")
        }
        return object
    }

    /// The answer's bytes as they came, for `--json`.
    static func printRaw(_ answer: HTTPClientResponse) {
        FileHandle.standardOutput.write(Data(answer.body))
        if answer.body.last != 0x0A { FileHandle.standardOutput.write(Data("\n".utf8)) }
    }
}

struct KeyCreate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Make a key: a /v1 bearer token and an S3 access key pair, shown this once.")

    @Argument(help: "The key's name (1 to 200 bytes).") var name: String
    @Option(name: .customLong("grant"), help: "A grant ACTION[:PATTERN], e.g. read:photos; repeat for more (at least one).")
    var grants: [String] = []
    @Option(help: "Seconds until the key expires (default never).") var expiresIn: Int?
    @OptionGroup var options: AdminOptions

    func validate() throws {
        guard !grants.isEmpty else { throw ValidationError("give at least one --grant ACTION[:PATTERN]") }
    }

    func run() throws {
        try KeyCommand.run("create", options) { client throws(KeyCommandError) in
            var body: [String: Any] = ["name": name, "grants": grants]
            if let expiresIn { body["expires_in"] = expiresIn }
            let answer = try client.call("POST", body: body)
            if options.json { return KeyCommand.printRaw(answer) }
            let key = try KeyCommand.object(answer)
            KeyOutput.printFields(key, ["id", "name", "grants", "expires", "token", "access_key_id", "secret_access_key"])
            printError("blobd key create: the token and the secret access key are not shown again; keep them now")
        }
    }
}

struct KeyList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the keys, without their secrets; the tokens file's credentials too (read-only).")

    @OptionGroup var options: AdminOptions

    func run() throws {
        try KeyCommand.run("list", options) { client throws(KeyCommandError) in
            let answer = try client.call("GET")
            if options.json { return KeyCommand.printRaw(answer) }
            guard let keys = try KeyCommand.object(answer)["keys"] as? [[String: Any]] else {
                throw .noAnswer("blobd's answer holds no list \"keys\"")
            }
            KeyOutput.printTable(keys)
        }
    }
}

struct KeyShow: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one key, without its secrets.")

    @Argument(help: "The key's id (see blobd key list).") var id: String
    @OptionGroup var options: AdminOptions

    func run() throws {
        try KeyCommand.run("show", options) { client throws(KeyCommandError) in
            let answer = try client.call("GET", "/" + AdminKeysClient.segment(id))
            if options.json { return KeyCommand.printRaw(answer) }
            KeyOutput.printFields(try KeyCommand.object(answer), KeyOutput.shown)
        }
    }
}

struct KeyGrant: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "grant",
        abstract: "Replace a key's grants with those given (the token and access key stay).")

    @Argument(help: "The key's id (see blobd key list).") var id: String
    @Argument(help: "Its new grants, each ACTION[:PATTERN] (at least one).") var grants: [String] = []
    @OptionGroup var options: AdminOptions

    func validate() throws {
        guard !grants.isEmpty else { throw ValidationError("give the key's new grants, each ACTION[:PATTERN]; to take every grant away, revoke it") }
    }

    func run() throws {
        try KeyCommand.run("grant", options) { client throws(KeyCommandError) in
            let answer = try client.call("PUT", "/" + AdminKeysClient.segment(id) + "/grants", body: ["grants": grants])
            if options.json { return KeyCommand.printRaw(answer) }
            KeyOutput.printFields(try KeyCommand.object(answer), KeyOutput.shown)
        }
    }
}

struct KeyRevoke: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Revoke a key: its token and access key get 401 at once (within 2 s on the other nodes).",
        discussion: "With --json it prints nothing: blobd answers 204 without a body, and the exit status says it is done.")

    @Argument(help: "The key's id (see blobd key list).") var id: String
    @OptionGroup var options: AdminOptions

    func run() throws {
        try KeyCommand.run("revoke", options) { client throws(KeyCommandError) in
            _ = try client.call("DELETE", "/" + AdminKeysClient.segment(id))
            if !options.json { print("revoked \(AdminKeysClient.printable(id))") }
        }
    }
}

/// The readable output of `blobd key` without `--json`.
enum KeyOutput {
    /// The fields `show` and `grant` print, in order.
    static let shown = ["id", "name", "grants", "access_key_id", "created", "expires", "source", "read_only"]

    /// `name: value` lines, values aligned.
    static func printFields(_ key: [String: Any], _ names: [String]) {
        let width = (names.map(\.count).max() ?? 0) + 2
        for name in names {
            print((name + ":").padding(toLength: width, withPad: " ", startingAt: 0) + text(key[name], field: name))
        }
    }

    /// One row per key under a header, columns aligned.
    static func printTable(_ keys: [[String: Any]]) {
        let columns = [("ID", "id"), ("NAME", "name"), ("ACCESS KEY", "access_key_id"), ("EXPIRES", "expires"),
                       ("SOURCE", "source"), ("GRANTS", "grants")]
        let rows = [columns.map(\.0)] + keys.map { key in columns.map { text(key[$0.1], field: $0.1) } }
        var widths = columns.map { _ in 0 }
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        for row in rows {
            let cells = row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }
            print(cells.joined(separator: "  "))
        }
        if keys.isEmpty { print("(no keys)") }
    }

    /// A JSON value as text: lists joined by commas, null as `-` (`never` for expires).
    static func text(_ value: Any?, field: String) -> String {
        switch value {
        case let text as String: return AdminKeysClient.printable(text)
        case let list as [Any]: return list.map { text($0, field: field) }.joined(separator: ",")
        case let number as NSNumber:
            if String(cString: number.objCType) == "c" { return number.boolValue ? "yes" : "no" }
            return number.stringValue
        default: return field == "expires" ? "never" : "-"
        }
    }
}
