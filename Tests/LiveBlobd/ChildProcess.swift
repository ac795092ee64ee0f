import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with posix_spawn, with the part of Foundation's `Process` API the
/// tests use. Foundation's `Process.run()` on Linux (swift-corelibs-foundation in Swift 6.3.1)
/// lists `/proc/self/fd` by copying each whole 256-byte `dirent.d_name`, which reads past
/// glibc's buffer and now and then kills the whole test process with SIGSEGV
/// (swiftlang/swift-corelibs-foundation#5472; seen here once in about ten full runs).
///
/// The child gets stdin, stdout and stderr from the handles given (or /dev/null), every other
/// descriptor closed, and its own process group, as with `Process`.
public final class ChildProcess: @unchecked Sendable {
    public var executableURL: URL?
    public var arguments: [String] = []
    /// nil: this process's environment.
    public var environment: [String: String]?
    /// A `FileHandle` or a `Pipe`; nil is /dev/null.
    public var standardInput: Any?
    public var standardOutput: Any?
    public var standardError: Any?

    public private(set) var processIdentifier: pid_t = 0
    /// The wait status once the child has been reaped.
    private let reaped = Mutex<Int32?>(nil)

    public init() {}

    /// Starts the child.
    public func run() throws {
        guard let path = executableURL?.path else { throw TestFailure("ChildProcess: no executable") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let devNull = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { close(devNull) }
        for (target, handle) in [(STDIN_FILENO, standardInput), (STDOUT_FILENO, standardOutput), (STDERR_FILENO, standardError)] {
            posix_spawn_file_actions_adddup2(&actions, Self.descriptor(of: handle, for: target) ?? devNull, target)
        }
        // Every other descriptor is closed in the child (glibc 2.34's closefrom action).
        guard let closeFrom = Self.addCloseFrom else { throw TestFailure("ChildProcess: no posix_spawn_file_actions_addclosefrom_np") }
        _ = closeFrom(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let env = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { env.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, path, &actions, &attributes, argv, env)
        guard status == 0 else { throw TestFailure("ChildProcess: posix_spawn \(path): \(String(cString: strerror(status)))") }
        processIdentifier = pid
        // As Process does: the parent's copies of the pipe ends the child uses are closed.
        for handle in [standardOutput, standardError] {
            if let pipe = handle as? Pipe { try? pipe.fileHandleForWriting.close() }
        }
        if let pipe = standardInput as? Pipe { try? pipe.fileHandleForReading.close() }
    }

    /// False once the child has exited (it is reaped then).
    public var isRunning: Bool {
        reaped.withLock { status in
            guard status == nil, processIdentifier > 0 else { return false }
            var wait: Int32 = 0
            let result = waitpid(processIdentifier, &wait, WNOHANG)
            if result == processIdentifier { status = wait }
            return result == 0
        }
    }

    /// Waits for the child to exit.
    public func waitUntilExit() {
        while isRunning { usleep(2_000) }
    }

    /// The exit status, or the signal that ended the child (as `Process` reports it).
    public var terminationStatus: Int32 {
        let wait = reaped.withLock { $0 } ?? 0
        return wait & 0x7F == 0 ? (wait >> 8) & 0xFF : wait & 0x7F
    }

    public func terminate() { kill(processIdentifier, SIGTERM) }

    /// Kills the child (SIGKILL) if it still runs, and reaps it: a test must leave no zombie,
    /// which would confuse Swift Testing's exit-test monitor (it waits on any child).
    public func stop() {
        guard isRunning else { return }
        kill(processIdentifier, SIGKILL)
        waitUntilExit()
    }

    private static func descriptor(of handle: Any?, for target: Int32) -> Int32? {
        switch handle {
        case let pipe as Pipe: target == STDIN_FILENO ? pipe.fileHandleForReading.fileDescriptor : pipe.fileHandleForWriting.fileDescriptor
        case let file as FileHandle where file === FileHandle.nullDevice: nil
        case let file as FileHandle: file.fileDescriptor
        default: nil
        }
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    /// Not in the Glibc module's headers; looked up in libc.
    private static let addCloseFrom: AddCloseFrom? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: AddCloseFrom.self) }
}
