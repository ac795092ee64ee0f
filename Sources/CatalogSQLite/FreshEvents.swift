import BlobCore
import Synchronization

/// The never-tried events this process committed since it opened the index, in memory, so that
/// the delivery loop's claim need not read and decode the rows it just wrote: a copy of every
/// row of `event_queue` whose id is above `floor`, in id order.
///
/// It stays exact because this process is the file's one writer: the writer connection stages
/// the events of a transaction (`stage`) and publishes them once it commits, before the next
/// transaction begins (`publishStaged`), so publication follows the ids; deletions and retries
/// take their ids out once they commit. Rows at or below `floor` (those of an earlier process,
/// or of an overflow) are read from the table. Memory is bounded: past `capacity` events the
/// copy is dropped and `floor` moves up to the newest, which makes them such rows.
///
/// Once a claim has read that neither table holds such a row nor a retry (`markClear`), the
/// next claims need not read the tables at all, until an event is released for a retry or an
/// overflow moves the floor: only this process makes either, and each changes `version`.
final class FreshEvents: Sendable {
    private struct State {
        var floor: Int64
        /// The newest id published (or the floor): rows above it may be committed and not yet
        /// here, and no claim takes them.
        var newest: Int64
        var published: [OutboxEvent] = []
        var staged: [OutboxEvent] = []
        /// The id the next event gets.
        var nextID: Int64
        /// One more at each overflow and each release for a retry.
        var version = 0
        /// The version at which the tables were read to hold no retry and no row at or below the floor.
        var clearVersion: Int?
    }

    private let state: Mutex<State>
    let capacity: Int

    /// A copy whose every row is above `floor` (the newest id in `event_queue` when it opens);
    /// ids are handed out from `nextID` (above every id either table has had).
    init(floor: Int64, nextID: Int64, capacity: Int = 16_384) {
        state = Mutex(State(floor: floor, newest: floor, nextID: nextID))
        self.capacity = capacity
    }

    /// The id of an event about to be written: one more than the last, so that ids only grow
    /// (one that a rollback leaves unused never comes back).
    func takeID() -> Int64 {
        state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
    }

    /// An event written by the writer's transaction now open.
    func stage(_ event: OutboxEvent) {
        state.withLock { $0.staged.append(event) }
    }

    /// The open transaction committed: its events join the copy.
    func publishStaged() {
        state.withLock { state in
            guard let newest = state.staged.last?.id else { return }
            state.newest = newest
            if state.published.count + state.staged.count > capacity {
                state.floor = max(state.floor, newest)
                state.published = []
                state.version += 1
            } else {
                state.published += state.staged
            }
            state.staged = []
        }
    }

    /// The open transaction rolled back: its events never were.
    func discardStaged() {
        state.withLock { $0.staged = [] }
    }

    /// The floor, the newest id published and the events above the floor, taken together (a
    /// claim must not pair a copy with a floor that an overflow moved after it).
    /// `clear` when the tables are known to hold no retry and no row at or below the floor;
    /// `version` is for `markClear`.
    func snapshot() -> (floor: Int64, newest: Int64, events: [OutboxEvent], clear: Bool, version: Int) {
        state.withLock { ($0.floor, $0.newest, $0.published, $0.clearVersion == $0.version, $0.version) }
    }

    /// A read that began after `snapshot()` answered `version` found no retry and no row at or
    /// below its floor: so it stays while nothing changed the version meanwhile.
    func markClear(version: Int) {
        state.withLock { state in
            if state.version == version { state.clearVersion = version }
        }
    }

    /// Events deleted (or, `retried`, moved to `event_retries`) by a committed transaction.
    func remove(_ ids: [Int64], retried: Bool = false) {
        guard let newest = ids.max() else { return }
        let gone = Set(ids)
        state.withLock { state in
            if retried { state.version += 1 }
            // Ids are in order: only the events up to the newest removed can be among them.
            let end = state.published.firstIndex { $0.id > newest } ?? state.published.endIndex
            let kept = state.published[..<end].filter { !gone.contains($0.id) }
            state.published.replaceSubrange(..<end, with: kept)
        }
    }
}
