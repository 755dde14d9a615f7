using System.Text.RegularExpressions;

namespace AgentGraph.Sdk;

/// <summary>A detector of values that look like secrets or personal data: its id is named in refusals.</summary>
/// <param name="Id">The id (e.g. <c>card-number</c>).</param>
/// <param name="DataClass">The class a hit reveals.</param>
/// <param name="Test">Whether the value contains such data.</param>
public sealed record Detector(string Id, DataClass DataClass, Func<string, bool> Test);

/// <summary>
/// The detectors, a literal port of the TypeScript SDK's detectors.ts (which specifies them precisely): the same
/// regular expressions (ASCII classes, lookarounds instead of word boundaries), Luhn for card numbers, Shannon
/// entropy ≥ 4.5 bits/char over runs of ≥ 32 characters with lower, upper and digit for high entropy.
/// </summary>
public static class Detectors
{
    private const string NotAfterAlnum = "(?<![A-Za-z0-9])";
    private const string NotBeforeAlnum = "(?![A-Za-z0-9])";
    private const RegexOptions Options = RegexOptions.CultureInvariant;

    private static readonly string[] ApiKeyPatterns =
    [
        "(?:AKIA|ASIA)[0-9A-Z]{16}",
        "gh[pousr]_[A-Za-z0-9]{36,}",
        "github_pat_[A-Za-z0-9_]{22,}",
        "glpat-[A-Za-z0-9_-]{20,}",
        "xox[abposr]-[A-Za-z0-9-]{10,}",
        "(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
        "sk-[A-Za-z0-9_-]{20,}",
        "AIza[0-9A-Za-z_-]{35}",
        "npm_[A-Za-z0-9]{36}",
    ];

    private static readonly Regex CardCandidate = new("(?<![0-9])[2-6][0-9](?:[ -]?[0-9]){11,17}(?![0-9])", Options);
    private static readonly Regex EntropyRun = new("[A-Za-z0-9+/=_-]{32,}", Options);

    /// <summary>The high-entropy detector's thresholds.</summary>
    public const int HighEntropyMinLength = 32;
    /// <summary>Bits per character.</summary>
    public const double HighEntropyMinBits = 4.5;

    private static Detector RegexDetector(string id, DataClass dataClass, string source)
    {
        var re = new Regex(source, Options);
        return new Detector(id, dataClass, re.IsMatch);
    }

    /// <summary>The Luhn check over a string of digits.</summary>
    public static bool LuhnValid(string digits)
    {
        ArgumentNullException.ThrowIfNull(digits);
        var sum = 0;
        for (var i = 0; i < digits.Length; i++)
        {
            var d = digits[digits.Length - 1 - i] - '0';
            if (i % 2 == 1)
            {
                d *= 2;
                if (d > 9) d -= 9;
            }
            sum += d;
        }
        return sum % 10 == 0;
    }

    /// <summary>Shannon entropy of <paramref name="text"/> in bits per character (over UTF-16 code units... of an ASCII run).</summary>
    public static double ShannonEntropy(string text)
    {
        ArgumentNullException.ThrowIfNull(text);
        var counts = new Dictionary<char, int>();
        foreach (var ch in text) counts[ch] = counts.GetValueOrDefault(ch) + 1;
        double entropy = 0;
        foreach (var count in counts.Values)
        {
            var p = (double)count / text.Length;
            entropy -= p * Math.Log2(p);
        }
        return entropy;
    }

    private static bool CardNumber(string value)
    {
        foreach (Match match in CardCandidate.Matches(value))
        {
            var digits = match.Value.Replace(" ", "", StringComparison.Ordinal).Replace("-", "", StringComparison.Ordinal);
            if (digits.Length is >= 13 and <= 19 && LuhnValid(digits)) return true;
        }
        return false;
    }

    private static bool HighEntropy(string value)
    {
        foreach (Match match in EntropyRun.Matches(value))
        {
            var run = match.Value;
            if (!run.Any(char.IsAsciiLetterLower) || !run.Any(char.IsAsciiLetterUpper) || !run.Any(char.IsAsciiDigit)) continue;
            if (ShannonEntropy(run) >= HighEntropyMinBits) return true;
        }
        return false;
    }

    /// <summary>Every detector, in the order refusals name them.</summary>
    public static IReadOnlyList<Detector> All { get; } =
    [
        RegexDetector("pem-private-key", DataClass.SECRET, "-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
        RegexDetector("jwt", DataClass.SECRET, $"{NotAfterAlnum}eyJ[A-Za-z0-9_-]{{8,}}\\.eyJ[A-Za-z0-9_-]{{8,}}\\.[A-Za-z0-9_-]*"),
        RegexDetector("api-key", DataClass.SECRET, $"{NotAfterAlnum}(?:{string.Join("|", ApiKeyPatterns)})"),
        RegexDetector("bearer-token", DataClass.SECRET, $"{NotAfterAlnum}[Bb][Ee][Aa][Rr][Ee][Rr][ \\t]+[A-Za-z0-9._~+/-]{{16,}}=*"),
        RegexDetector("url-password", DataClass.SECRET, "[A-Za-z][A-Za-z0-9+.-]*://[^ \\t\\r\\n/?#@:]*:[^ \\t\\r\\n/?#@]+@"),
        new Detector("card-number", DataClass.SECRET, CardNumber),
        RegexDetector("ssn", DataClass.PERSONAL, $"{NotAfterAlnum}(?!000|666|9[0-9]{{2}})[0-9]{{3}}-(?!00)[0-9]{{2}}-(?!0000)[0-9]{{4}}{NotBeforeAlnum}"),
        new Detector("high-entropy", DataClass.SECRET, HighEntropy),
    ];

    /// <summary>The detectors that fire on <paramref name="value"/>.</summary>
    public static IReadOnlyList<Detector> Detect(string value, IReadOnlyList<Detector>? detectors = null) =>
        (detectors ?? All).Where(d => d.Test(value)).ToList();
}
