import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// The 256 folders of `blobs/`, open for the fsync that makes a new link in one of them
/// durable. Closed when the last holder lets go (the store, and the index's commit hook): also
/// when the store fails to open after they were opened, so a failed start leaks none of them.
final class BlobFolders: Sendable {
    /// The open folders, in `BlobRecord.folders` order.
    let descriptors: [FileDescriptor]

    /// Opens `directory/blobs/ab/` for every `ab`; if one cannot be opened, none stays open.
    init(directory: String) throws(StoreError) {
        var descriptors: [FileDescriptor] = []
        descriptors.reserveCapacity(BlobRecord.folders.count)
        do {
            for folder in BlobRecord.folders {
                descriptors.append(try FileSystem.open("\(directory)/blobs/\(folder)", O_RDONLY | O_DIRECTORY))
            }
        } catch {
            descriptors.forEach { $0.close() }
            throw error
        }
        self.descriptors = descriptors
    }

    deinit { descriptors.forEach { $0.close() } }
}
