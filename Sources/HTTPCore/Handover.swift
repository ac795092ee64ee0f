/// Hands a value to exactly one other thread. `@unchecked Sendable` is sound only when the
/// sender no longer touches the value after handing it over.
public struct Handover<Value>: @unchecked Sendable {
    public let value: Value
    public init(value: Value) { self.value = value }
}
