using System.Globalization;
using System.Text.RegularExpressions;

namespace AgentGraph.Sdk;

/// <summary>
/// <c>Retry-After</c> (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date in one of the three forms of §5.6.7
/// (IMF-fixdate, obsolete RFC 850, asctime). A date becomes <c>date - now</c>, never below 0; anything else is
/// ignored (null). Parsed by hand with the same rules as the TypeScript SDK, so every SDK reads the same values.
/// </summary>
public static partial class RetryAfter
{
    private static readonly string[] Months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

    [GeneratedRegex("^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), ([0-9]{2}) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([0-9]{4}) ([0-9]{2}):([0-9]{2}):([0-9]{2}) GMT$", RegexOptions.CultureInvariant)]
    private static partial Regex ImfFixdate();

    [GeneratedRegex("^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), ([0-9]{2})-(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2}) GMT$", RegexOptions.CultureInvariant)]
    private static partial Regex Rfc850();

    [GeneratedRegex("^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([ 0-9][0-9]) ([0-9]{2}):([0-9]{2}):([0-9]{2}) ([0-9]{4})$", RegexOptions.CultureInvariant)]
    private static partial Regex Asctime();

    [GeneratedRegex("^[0-9]+$", RegexOptions.CultureInvariant)]
    private static partial Regex Digits();

    private static int N(string s) => int.Parse(s.Trim(), NumberStyles.None, CultureInfo.InvariantCulture);

    /// <summary>Epoch milliseconds of an HTTP-date, or null.</summary>
    public static double? ParseHttpDate(string value, double nowMs)
    {
        ArgumentNullException.ThrowIfNull(value);
        int year, day, h, mi, s;
        string month;
        Match m;
        if ((m = ImfFixdate().Match(value)).Success)
        {
            (day, month, year, h, mi, s) = (N(m.Groups[1].Value), m.Groups[2].Value, N(m.Groups[3].Value), N(m.Groups[4].Value), N(m.Groups[5].Value), N(m.Groups[6].Value));
        }
        else if ((m = Rfc850().Match(value)).Success)
        {
            // RFC 9110: a two-digit year more than 50 years in the future is the most recent past year with those digits.
            var currentYear = DateTimeOffset.FromUnixTimeMilliseconds((long)Math.Floor(nowMs)).UtcDateTime.Year;
            year = currentYear / 100 * 100 + N(m.Groups[3].Value);
            if (year > currentYear + 50) year -= 100;
            (day, month, h, mi, s) = (N(m.Groups[1].Value), m.Groups[2].Value, N(m.Groups[4].Value), N(m.Groups[5].Value), N(m.Groups[6].Value));
        }
        else if ((m = Asctime().Match(value)).Success)
        {
            (month, day, h, mi, s, year) = (m.Groups[1].Value, N(m.Groups[2].Value), N(m.Groups[3].Value), N(m.Groups[4].Value), N(m.Groups[5].Value), N(m.Groups[6].Value));
        }
        else
        {
            return null;
        }
        if (day < 1 || day > 31 || h > 23 || mi > 59 || s > 60) return null;
        // Like Date.UTC: day overflow rolls into the next month; a leap second (60) counts as 59.
        var date = new DateTime(year, Array.IndexOf(Months, month) + 1, 1, h, mi, Math.Min(s, 59), DateTimeKind.Utc).AddDays(day - 1);
        return new DateTimeOffset(date).ToUnixTimeMilliseconds();
    }

    /// <summary>The wait a <c>Retry-After</c> header asks for, in ms, or null when absent or malformed.</summary>
    public static double? Parse(string? header, double nowMs)
    {
        if (header is null) return null;
        var value = header.Trim();
        if (Digits().IsMatch(value)) return double.Parse(value, CultureInfo.InvariantCulture) * 1000;
        var date = ParseHttpDate(value, nowMs);
        return date is null ? null : Math.Max(0, date.Value - nowMs);
    }
}
