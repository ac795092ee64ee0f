#if canImport(Glibc)
import Glibc
#endif

/// HTTP-date (RFC 9110 §5.6.7): IMF-fixdate out; IMF-fixdate, RFC 850 and asctime in.
public enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let longDays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for seconds since the epoch. On every response, so it
    /// is built from bytes, without libc's time-zone lock.
    public static func format(_ seconds: Int64) -> String {
        let t = Fields(seconds)
        guard (0...9999).contains(t.year) else {
            return "\(days[t.weekday]), \(two(t.day)) \(months[t.month - 1]) \(t.year) \(two(t.hour)):\(two(t.minute)):\(two(t.second)) GMT"
        }
        return String(unsafeUninitializedCapacity: 29) { out in
            var i = 0
            func put(_ text: String) {
                for byte in text.utf8 { out[i] = byte; i += 1 }
            }
            func put(_ value: Int, digits count: Int) {
                digits(value, count) { out[i] = $0; i += 1 }
            }
            put(days[t.weekday]); put(", ")
            put(t.day, digits: 2); put(" ")
            put(months[t.month - 1]); put(" ")
            put(t.year, digits: 4); put(" ")
            put(t.hour, digits: 2); put(":")
            put(t.minute, digits: 2); put(":")
            put(t.second, digits: 2); put(" GMT")
            return i
        }
    }

    /// `1994-11-06T08:49:37Z` (RFC 3339), for JSON.
    public static func formatRFC3339(_ seconds: Int64) -> String {
        let t = Fields(seconds)
        return "\(t.year)-\(two(t.month))-\(two(t.day))T\(two(t.hour)):\(two(t.minute)):\(two(t.second))Z"
    }

    /// `2026-11-22T20:04:44.123Z` appended to `out`: a log timestamp, by arithmetic.
    public static func appendLogTimestamp(seconds: Int64, milliseconds: Int, to out: inout [UInt8]) {
        let t = Fields(seconds)
        func digits(_ value: Int, _ count: Int) {
            Self.digits(value, count) { out.append($0) }
        }
        digits(t.year, 4); out.append(UInt8(ascii: "-")); digits(t.month, 2); out.append(UInt8(ascii: "-"))
        digits(t.day, 2); out.append(UInt8(ascii: "T")); digits(t.hour, 2); out.append(UInt8(ascii: ":"))
        digits(t.minute, 2); out.append(UInt8(ascii: ":")); digits(t.second, 2); out.append(UInt8(ascii: "."))
        digits(milliseconds, 3); out.append(UInt8(ascii: "Z"))
    }

    /// The last `count` decimal digits of `value` (not negative), each given to `put`.
    private static func digits(_ value: Int, _ count: Int, _ put: (UInt8) -> Void) {
        var divisor = 1
        for _ in 1..<count { divisor *= 10 }
        while divisor > 0 {
            put(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }

    /// Seconds since the epoch of a UTC date and time, by arithmetic (H. Hinnant's
    /// `days_from_civil`, proleptic Gregorian), the inverse of `Fields`. Out-of-range fields
    /// carry over (31 February is 3 March), as timegm's do.
    public static func seconds(year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + hour * 3600 + minute * 60 + second
    }

    /// The UTC calendar fields of a time, by arithmetic (days to civil date after H. Hinnant's
    /// `civil_from_days`, proleptic Gregorian).
    private struct Fields {
        let year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int
        /// 0 is Sunday.
        let weekday: Int

        init(_ seconds: Int64) {
            let (quotient, remainder) = Int(seconds).quotientAndRemainder(dividingBy: 86_400)
            let days = remainder < 0 ? quotient - 1 : quotient
            let secondOfDay = remainder < 0 ? remainder + 86_400 : remainder
            hour = secondOfDay / 3600
            minute = secondOfDay / 60 % 60
            second = secondOfDay % 60
            weekday = ((days + 4) % 7 + 7) % 7  // 1970-01-01 was a Thursday
            let z = days + 719_468
            let era = (z >= 0 ? z : z - 146_096) / 146_097
            let dayOfEra = z - era * 146_097
            let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
            let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
            let shiftedMonth = (5 * dayOfYear + 2) / 153  // March = 0
            day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
            month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
            year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        }
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
            if year > Fields(Int64(time(nil))).year + 50 { year -= 100 }
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
        let seconds = seconds(year: Int64(year), month: Int64(month + 1), day: Int64(day), hour: Int64(hour),
                              minute: Int64(minute), second: Int64(second))
        // 31 Feb carries over to 3 Mar: such a date is invalid.
        let fields = Fields(seconds)
        guard fields.day == day, fields.month == month + 1 else { return nil }
        return seconds
    }

    private static func two(_ value: Int) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
