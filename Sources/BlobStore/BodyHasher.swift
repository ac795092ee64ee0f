import Dispatch

/// The digests of a body as `HashingFileWriter` writes it out: SHA-256, and MD5 when asked (S3's
/// ETag), stitched into one pass with SHA-256 where the CPU allows, and any digest the caller
/// adds (`extra`, S3's `x-amz-checksum-*`).
///
/// MD5 runs at about a third of SHA-256's speed, so on the connection's thread it would cap a
/// large upload well below one that needs only SHA-256. A body of 1 MiB or more (or of unknown
/// length) is therefore hashed on a second thread, without copying: the writer fills one of
/// four 256 KiB buffers, writes it to the file, and hands it to a serial queue that hashes the
/// buffers in order while the writer fills the next. Memory per body stays at 1 MiB. Smaller
/// bodies are hashed on the writer's thread, where a thread hop would cost more than hashing.
///
/// `@unchecked Sendable` is sound: the hashers are touched only on `queue` once it exists (and
/// only on the writer's thread otherwise); a buffer belongs to the writer from `takeBuffer` until
/// `hash` hands it over, then to the queue until it signals `free`; the queue hashes in order,
/// so the buffer after the last one taken is the oldest handed over; `finish` waits for the queue,
/// and the buffers are freed only once no block holds the hasher.
public final class BodyHasher: @unchecked Sendable {
    /// What a body hashes to.
    public struct Digests: Sendable, Equatable {
        public let sha256: [UInt8]
        /// Nil unless MD5 was asked for.
        public let md5: [UInt8]?
    }

    /// Bodies of this size or more are hashed on a second thread.
    static let threadedFrom: UInt64 = 1 << 20
    private static let bufferCount = 4

    private var sha256: SHA256Hasher
    private var md5: MD5Hasher?
    private let extra: ((UnsafeRawBufferPointer) -> Void)?
    private let queue: DispatchQueue?
    /// Counts the free buffers. Made with 0 and signalled once per buffer: libdispatch traps if
    /// a semaphore is released below the value it was made with, and the writer's last buffer
    /// is never given back.
    private let free = DispatchSemaphore(value: 0)
    private var buffers: [UnsafeMutableRawBufferPointer] = []
    /// The buffer the writer holds (an index into `buffers`).
    private var current = -1
    private var finished: Digests?

    /// `md5`: compute MD5 too. `extra` sees every byte in order (on the hashing thread for a
    /// large body). `expectedSize`: the body's length, nil if unknown (counted as large).
    /// `resuming`: the SHA-256 of the bytes before the body (a resumable upload's saved state);
    /// it goes on from there, and MD5 must not be asked for then.
    public init(md5: Bool, extra: ((UnsafeRawBufferPointer) -> Void)? = nil, expectedSize: UInt64?,
                resuming sha256: SHA256Hasher = SHA256Hasher()) {
        self.sha256 = sha256
        self.md5 = md5 ? MD5Hasher() : nil
        self.extra = extra
        if expectedSize.map({ $0 >= Self.threadedFrom }) ?? true {
            queue = DispatchQueue(label: "blobd.body-hasher")
            buffers = (0..<Self.bufferCount).map { _ in
                .allocate(byteCount: HashingFileWriter.maxBufferSize, alignment: 4096)
            }
            for _ in buffers { free.signal() }
        } else {
            queue = nil
        }
    }

    /// Every block on `queue` holds the hasher, so this runs only once none is waiting, possibly
    /// on `queue`'s own thread (after the last block, when its writer was dropped mid-body):
    /// waiting for `queue` here would trap.
    deinit {
        for buffer in buffers { buffer.deallocate() }
    }

    /// A buffer of `HashingFileWriter.maxBufferSize` bytes for the writer to fill, once one is
    /// free; nil when hashing on the writer's thread (the writer then keeps its own).
    func takeBuffer() -> UnsafeMutableRawBufferPointer? {
        guard queue != nil else { return nil }
        free.wait()
        current = (current + 1) % buffers.count
        return buffers[current]
    }

    /// Hashes the first `count` bytes of `buffer`, which the writer has written out. On the
    /// second thread, `buffer` (the last one taken) is handed over and the next one returned;
    /// otherwise the bytes are hashed at once and nil returned (the writer keeps `buffer`).
    func hash(_ buffer: UnsafeMutableRawBufferPointer, count: Int) -> UnsafeMutableRawBufferPointer? {
        guard let queue else {
            update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            return nil
        }
        let index = current
        queue.async { [self] in
            update(UnsafeRawBufferPointer(rebasing: buffers[index][..<count]))
            free.signal()
        }
        return takeBuffer()
    }

    /// The digests of every byte handed over, once all are hashed. Idempotent; call it from the
    /// writer's side only, after the writer's last flush.
    public func finish() -> Digests {
        if let finished { return finished }
        queue?.sync {}
        let digests = Digests(sha256: sha256.finalize(), md5: md5?.finalize())
        finished = digests
        return digests
    }

    /// The SHA-256 of every byte handed over, not finalized, once all are hashed (a resumable
    /// upload saves its state). Call it from the writer's side only, after the writer's flush.
    func sha256SoFar() -> SHA256Hasher {
        queue?.sync {}
        return sha256
    }

    private func update(_ bytes: UnsafeRawBufferPointer) {
        if md5 != nil {
            md5?.update(bytes, alongWith: &sha256)
        } else {
            sha256.update(bytes)
        }
        extra?(bytes)
    }
}
