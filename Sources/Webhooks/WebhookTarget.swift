import OutboundHTTP

/// A webhook target: `--notify-webhook NAME=URL`, signed when `--notify-secret NAME=whsec_...`
/// gives it a secret (Standard Webhooks).
public struct WebhookTarget: Sendable, Equatable {
    public let url: ServerURL
    /// The secret's bytes (the base64 after `whsec_`), nil for unsigned deliveries.
    public var secret: [UInt8]?

    public init(url: ServerURL, secret: [UInt8]? = nil) {
        self.url = url
        self.secret = secret
    }
}

