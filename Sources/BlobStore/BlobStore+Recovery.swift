import Foundation
import Logging

import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// Start-up recovery after a crash or power cut, the mark of a clean stop, and (in a cluster)
/// the reclaim of replaced versions.
extension BlobStore {
    /// Left in the data directory by `markStoppedCleanly()`: the last run stopped cleanly.
    static let cleanStopMark = "clean-stop"

    /// Marks the data directory as cleanly stopped: the next start skips the scan for orphans of
    /// a power cut. Call once nothing is being written any more (a write still pending is in the
    /// pending log, which this makes durable first).
    public func markStoppedCleanly() {
        pending.sync()
        do throws(StoreError) {
            try FileSystem.open(nodeDirectory + "/" + Self.cleanStopMark, O_WRONLY | O_CREAT | O_TRUNC).closeAfter {
                descriptor throws(StoreError) in try FileSystem.sync(descriptor)
            }
            try FileSystem.syncDirectory(directory + "/tmp")
        } catch {
            // The next start then looks for orphans of a power cut, which finds none.
            logger.warning("Cannot mark the stop as clean", metadata: ["error": "\(error)"])
        }
    }

    /// Without the mark of a clean stop, the last run may have ended in a power cut, which can
    /// take pending-log lines with it but leave the files they named. (In a cluster the other
    /// nodes' writes in flight look the same, so there fsck finds such orphans instead.)
    func reclaimOrphansUnlessStoppedCleanly() throws(StoreError) {
        if FileSystem.remove(nodeDirectory + "/" + Self.cleanStopMark) {
            try FileSystem.syncDirectory(nodeDirectory)
        } else if !options.isShared {
            try reclaimRecentOrphans()
        }
    }

    /// Undoes what a crash interrupted, without reading any blob: a version in a pending log
    /// `leftBehind` that the index does not name was never acknowledged, so its file in `blobs/`
    /// goes; the same for an unfinished upload's completion link. (The `tmp/ab/VERSION` markers
    /// and `VERSION.part` temp files of earlier releases are handled the same way.)
    func recover(_ leftBehind: [(log: Int, versions: [String])]) throws(StoreError) {
        var removed = 0
        func removeUncommitted(_ version: String) throws(StoreError) {
            // A version committed and since replaced is garbage, not uncommitted: in a cluster
            // its file stays for the grace period.
            guard try !index.containsVersion(version), try !(sharedIndex?.isGarbage(version) ?? false) else { return }
            if FileSystem.remove(path(ofVersion: version)) { removed += 1 }
        }
        for (log, versions) in leftBehind {
            for version in versions { try removeUncommitted(version) }
            FileSystem.remove(PendingWrites.path(nodeDirectory, log))
        }
        // In a cluster, nothing else here is this node's alone: other nodes may be completing
        // uploads, and replaced versions wait out their grace period (`reclaimGarbage`).
        if options.isShared {
            if removed > 0 { logger.info("Removed files of unfinished uploads", metadata: ["count": "\(removed)"]) }
            return
        }
        // Earlier releases' tmp/ab/ folders, where they exist.
        for folder in FileSystem.contents(of: directory + "/tmp") where folder.count == 2 {
            for name in FileSystem.contents(of: "\(directory)/tmp/\(folder)") {
                try removeUncommitted(name.hasSuffix(".part") ? String(name.dropLast(5)) : name)
                FileSystem.remove("\(directory)/tmp/\(folder)/\(name)")
            }
        }
        for id in try uploadIndex.unfinishedUploads() where try !index.containsVersion(id) {
            FileSystem.remove(path(ofVersion: id))
        }
        // Replaced or deleted versions whose unlink a crash may have cut off.
        for version in try index.garbage() where try !index.containsVersion(version) {
            FileSystem.remove(path(ofVersion: version))
        }
        try index.clearGarbage()
        if removed > 0 {
            logger.info("Removed files of unfinished uploads", metadata: ["count": "\(removed)"])
        }
    }

    /// Seconds before the newest change to a `blobs/` folder within which other folders are
    /// scanned for orphans after an unclean stop.
    ///
    /// A power cut can lose the last seconds of pending-log appends (they are not fsynced; the
    /// kernel writes dirty pages back within about 30 s), but not the files they named if those
    /// reached the disk. Those files were created in the last half minute or so before the
    /// cut, and a folder's mtime changes with every file created in it. So the folders changed
    /// within this window of the newest change hold every such orphan; with a new folder every
    /// 16 s that is about 20 of the 256, whatever the number of blobs.
    static let orphanWindow: Int = 300

    /// Removes the files in recently changed `blobs/` folders that the index does not name. Run
    /// at start after an unclean stop, when nothing is being written.
    func reclaimRecentOrphans() throws(StoreError) {
        var changed: [(folder: Int, seconds: Int)] = []
        for (folder, descriptor) in blobFolders.descriptors.enumerated() {
            if let status = try? descriptor.status() { changed.append((folder, Int(status.st_mtim.tv_sec))) }
        }
        guard let newest = changed.map(\.seconds).max() else { return }
        var removed = 0
        for (folder, seconds) in changed where seconds >= newest - Self.orphanWindow {
            let name = BlobRecord.folders[folder]
            let files = FileSystem.contents(of: "\(directory)/blobs/\(name)")
            guard !files.isEmpty else { continue }
            let indexed = try index.versions(inFolder: name)
            for file in files where !indexed.contains(file) {
                if FileSystem.remove("\(directory)/blobs/\(name)/\(file)") { removed += 1 }
            }
        }
        if removed > 0 {
            logger.info("Removed files of uploads a power cut interrupted", metadata: ["count": "\(removed)"])
        }
    }

    /// In a cluster: unlinks the files of versions replaced or deleted more than the grace
    /// period ago, if no other node is doing it now. Returns how many went.
    @discardableResult
    public func reclaimGarbage(limit: Int = 1000) -> Int {
        guard let sharedIndex else { return 0 }
        do {
            return try sharedIndex.reclaim(olderThan: options.reclaimGrace, limit: limit) { version in
                FileSystem.remove(path(ofVersion: version))
            }
        } catch {
            logger.warning("Reclaiming replaced versions failed", metadata: ["error": "\(error)"])
            return 0
        }
    }
}
