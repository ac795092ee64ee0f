#if canImport(Glibc)
import Glibc
#endif

/// The errno of a failed system call.
public struct Errno: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: Int32

    public init(_ code: Int32) {
        self.code = code
    }

    public var description: String { String(cString: strerror(code)) }
}

/// The one way blobd makes a system call: EINTR is retried, and EBADF — a descriptor that was
/// closed or reused, which only a bug in blobd can cause — stops the process with a message
/// instead of travelling up as an I/O error (a 500 that hides the bug, or worse, a write into a
/// file some other code opened since). Modelled on swift-nio's `NIOPosix/System.swift`.
///
/// Where an EBADF is a fact about the world rather than a bug (a socket libmicrohttpd may have
/// closed already, a standard error the parent closed, copy_file_range refusing a descriptor's
/// mode), the caller says so with `badDescriptorIsFatal: false`.
public enum SystemCall {
    /// Runs `call`, which returns -1 and sets errno on failure, again while it fails with
    /// EINTR; returns its last result, with errno as that call left it.
    @inlinable
    public static func run<Result: BinaryInteger>(_ name: StaticString, badDescriptorIsFatal: Bool = true,
                                                  _ call: () -> Result) -> Result {
        while true {
            let result = call()
            guard result == -1 else { return result }
            let code = errno
            if code == EINTR { continue }
            if code == EBADF && badDescriptorIsFatal { badDescriptor(name) }
            errno = code
            return result
        }
    }

    /// `run(_:_:)` that throws the errno of a failure.
    @inlinable
    @discardableResult
    public static func checked<Result: BinaryInteger>(_ name: StaticString, badDescriptorIsFatal: Bool = true,
                                                      _ call: () -> Result) throws(Errno) -> Result {
        let result = run(name, badDescriptorIsFatal: badDescriptorIsFatal, call)
        if result == -1 { throw Errno(errno) }
        return result
    }

    /// For calls that return their error instead of setting errno (posix_fallocate): 0 or the
    /// error, EINTR retried, EBADF fatal.
    @inlinable
    public static func returningError(_ name: StaticString, _ call: () -> Int32) -> Int32 {
        while true {
            let code = call()
            if code == EINTR { continue }
            if code == EBADF { badDescriptor(name) }
            return code
        }
    }

    /// Stops the process: a system call was given a descriptor that is not open.
    @usableFromInline
    static func badDescriptor(_ name: StaticString) -> Never {
        let message = "blobd: \(name) was given a closed or reused file descriptor (EBADF): a bug in blobd; stopping\n"
        // Said on stderr first: a release build's precondition failure drops its message.
        message.utf8CString.withUnsafeBufferPointer { _ = write(2, $0.baseAddress, $0.count - 1) }
        preconditionFailure(message)
    }
}
