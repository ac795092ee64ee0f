extension StringProtocol {
    /// Drops leading and trailing spaces and tabs (HTTP's optional whitespace).
    public func trimmingOWS() -> SubSequence {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return slice
    }
}
