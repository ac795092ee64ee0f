#if canImport(Glibc)
import Glibc
#endif

/// HTTP-date (RFC 9110 §5.6.7): IMF-fixdate out; IMF-fixdate, RFC 850 and asctime in.
public enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let longDays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for seconds since the epoch.
    public static func format(_ seconds: Int64) -> String {
        let t = utc(seconds)
        return "\(days[Int(t.tm_wday)]), \(two(t.tm_mday)) \(months[Int(t.tm_mon)]) \(t.tm_year + 1900) "
            + "\(two(t.tm_hour)):\(two(t.tm_min)):\(two(t.tm_sec)) GMT"
    }

    /// `1994-11-06T08:49:37Z` (RFC 3339), for JSON.
    public static func formatRFC3339(_ seconds: Int64) -> String {
        let t = utc(seconds)
        let year = String(t.tm_year + 1900)
        return "\(year)-\(two(t.tm_mon + 1))-\(two(t.tm_mday))T\(two(t.tm_hour)):\(two(t.tm_min)):\(two(t.tm_sec))Z"
    }

    /// Seconds since the epoch, or nil if `text` is not a valid HTTP-date in any of the three forms.
    public static func parse(_ text: String) -> Int64? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        if parts.count == 6, parts[5] == "GMT", parts[0].hasSuffix(","), days.contains(String(parts[0].dropLast())),
           parts[1].count == 2, parts[3].count == 4 {
            return make(year: Int(parts[3]), month: months.firstIndex(of: parts[2]), day: Int(parts[1]), time: parts[4])
        }
        // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
        if parts.count == 4, parts[3] == "GMT", parts[0].hasSuffix(","), longDays.contains(String(parts[0].dropLast())) {
            let date = parts[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard date.count == 3, date[0].count == 2, date[2].count == 2, let yy = Int(date[2]) else { return nil }
            // RFC 9110: a two-digit year more than 50 years in the future is in the past century.
            var year = 2000 + yy
            let now = utc(Int64(time(nil)))
            if year > Int(now.tm_year) + 1900 + 50 { year -= 100 }
            return make(year: year, month: months.firstIndex(of: date[1]), day: Int(date[0]), time: parts[2])
        }
        // asctime: Sun Nov  6 08:49:37 1994
        let fields = text.split(separator: " ").map(String.init)
        if fields.count == 5, days.contains(fields[0]), fields[4].count == 4, fields[2].count <= 2,
           text.count == 24 {
            return make(year: Int(fields[4]), month: months.firstIndex(of: fields[1]), day: Int(fields[2]), time: fields[3])
        }
        return nil
    }

    private static func make(year: Int?, month: Int?, day: Int?, time: String) -> Int64? {
        let hms = time.split(separator: ":", omittingEmptySubsequences: false)
        guard let year, let month, let day, (1...31).contains(day), hms.count == 3, hms.allSatisfy({ $0.count == 2 }),
              let hour = Int(hms[0]), let minute = Int(hms[1]), let second = Int(hms[2]),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second),
              hms.allSatisfy({ $0.allSatisfy(\.isASCIIDigit) }) else { return nil }
        var t = tm()
        t.tm_year = Int32(year - 1900)
        t.tm_mon = Int32(month)
        t.tm_mday = Int32(day)
        t.tm_hour = Int32(hour)
        t.tm_min = Int32(minute)
        t.tm_sec = Int32(second)
        let seconds = timegm(&t)
        // timegm normalises 31 Feb to 3 Mar: such a date is invalid.
        guard t.tm_mday == Int32(day), t.tm_mon == Int32(month) else { return nil }
        return Int64(seconds)
    }

    private static func utc(_ seconds: Int64) -> tm {
        var t = tm()
        var value = time_t(seconds)
        gmtime_r(&value, &t)
        return t
    }

    private static func two(_ value: Int32) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
