import Synchronization

/// Request ids: 16 hex digits, unique enough to find a request in the logs.
/// A random 32-bit prefix chosen at start, then a counter: unique within a run and across
/// nodes, and no system call per request.
public enum RequestID {
    private static let prefix = UInt32.random(in: 0...UInt32.max)
    private static let counter = Atomic<UInt32>(0)

    public static func next() -> String {
        let count = counter.add(1, ordering: .relaxed).newValue
        let value = UInt64(prefix) << 32 | UInt64(count)
        return String(unsafeUninitializedCapacity: 16) { buffer in
            for index in 0..<16 {
                let digit = UInt8(truncatingIfNeeded: value >> (60 - 4 * index)) & 0xF
                buffer[index] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "A") + digit - 10
            }
            return 16
        }
    }
}
