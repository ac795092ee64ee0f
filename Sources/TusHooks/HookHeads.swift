import MicroHTTPD

/// How an upload that is not tus (a /v1 PUT or POST, an S3 PutObject or multipart upload)
/// shows itself to a hook as tus metadata, and how the hook's `ChangeFileInfo.MetaData` changes
/// its head: `filetype` is the Content-Type, `filename` the key's last segment, `key` the key,
/// and every other entry a user metadata field (`Blob-Meta-*`, `x-amz-meta-*`).
extension HTTPRequestHead {
    /// The upload's metadata as a hook sees it; `prefix` is the dialect's user metadata prefix.
    public func hookMetadata(key: String?, prefix: String) -> [String: String] {
        var metadata: [String: String] = [:]
        for (name, value) in headers where name.lowercased().hasPrefix(prefix) {
            metadata[String(name.lowercased().dropFirst(prefix.count))] = value
        }
        if let type = self["Content-Type"] { metadata["filetype"] = type }
        if let key {
            metadata["key"] = key
            metadata["filename"] = key.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? key
        }
        return metadata
    }

    /// This head with the metadata a hook gave instead of its own: its Content-Type from
    /// `filetype` (none if absent), its user metadata fields from the other entries (`key` and
    /// `filename` name the upload and change nothing).
    public func applyingHookMetadata(_ metadata: [String: String], prefix: String) -> HTTPRequestHead {
        var fields = headers.filter { !$0.name.lowercased().hasPrefix(prefix) && !$0.name.caseInsensitiveEquals("Content-Type") }
        if let type = metadata["filetype"] { fields.append((name: "Content-Type", value: type)) }
        for (name, value) in metadata.sorted(by: { $0.key < $1.key }) where !["filetype", "filename", "key"].contains(name) {
            fields.append((name: prefix + name, value: value))
        }
        return HTTPRequestHead(method: method, path: path, version: version, headers: fields, query: query, peer: peer,
                               isStrictlyFramed: isStrictlyFramed, annotation: annotation)
    }
}
