using System.Text.RegularExpressions;

namespace AgentGraph.Sdk;

/// <summary>A detector of values that look like secrets or personal data: its id is named in refusals.</summary>
/// <param name="Id">The id (e.g. <c>card-number</c>).</param>
/// <param name="DataClass">The class a hit reveals.</param>
/// <param name="Test">Whether the value contains such data.</param>
public sealed record Detector(string Id, DataClass DataClass, Func<string, bool> Test);

/// <summary>
/// The detectors, a literal port of the TypeScript SDK's detectors.ts (which specifies them precisely): the same
/// regular expressions (ASCII classes, letter case spelled out instead of a flag, fixed-width lookbehinds, lookarounds
/// instead of word boundaries, numbered groups), Luhn for card numbers, keyword-anchored passwords and generated-looking
/// values (entropy only next to a keyword). Anchored checks (<c>$</c>) only ever see values without a line break.
/// </summary>
public static class Detectors
{
    private const string NotAfterAlnum = "(?<![A-Za-z0-9])";
    private const string NotBeforeAlnum = "(?![A-Za-z0-9])";
    private const RegexOptions Options = RegexOptions.CultureInvariant;

    /// <summary><c>password</c> → <c>[Pp][Aa][Ss][Ss][Ww][Oo][Rr][Dd]</c>: any letter case without a flag.</summary>
    private static string AnyCase(string word) =>
        string.Concat(word.Select(ch => ch is >= 'a' and <= 'z' ? $"[{char.ToUpperInvariant(ch)}{ch}]" : ch.ToString()));

    private static string AnyCaseOf(params string[] words) => string.Join("|", words.Select(AnyCase));

    private static readonly string[] ApiKeyPatterns =
    [
        "(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}",
        "gh[pousr]_[A-Za-z0-9]{36,}",
        "github_pat_[A-Za-z0-9_]{22,}",
        "glpat-[A-Za-z0-9_-]{20,}",
        "xox[abposr]-[A-Za-z0-9-]{10,}",
        "hooks\\.slack\\.com/(?:services|workflows)/[A-Za-z0-9_/-]{20,}",
        "(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
        "sk-[A-Za-z0-9_-]{20,}",
        "AIza[0-9A-Za-z_-]{35}",
        "npm_[A-Za-z0-9]{36}",
        "pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
        "SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}",
        "shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
        "do[opr]_v1_[a-f0-9]{64}",
        "hvs\\.[A-Za-z0-9_-]{90,}",
        "hf_[A-Za-z]{34}",
        "dapi[a-f0-9]{32}",
        "PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}",
        "lin_api_[A-Za-z0-9]{40}",
        "dp\\.pt\\.[A-Za-z0-9]{43}",
        "AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        "sq0(?:atp-[0-9A-Za-z_-]{22}|csp-[0-9A-Za-z_-]{43})",
        "discord(?:app)?\\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]{60,}",
        "[0-9]{8,10}:AA[A-Za-z0-9_-]{33}",
    ];

    private static readonly Regex CardCandidate = new("(?<![0-9])[2-6][0-9](?:[ -]?[0-9]){11,17}(?![0-9])", Options);

    /// <summary>The value after a secret keyword: at least this many characters…</summary>
    public const int HighEntropyMinLength = 16;
    /// <summary>…and at least this many bits per character (Shannon entropy over the value's own characters).</summary>
    public const double HighEntropyMinBits = 3.0;

    private static readonly Regex Uuid = new("^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$", Options);
    private static readonly Regex PathStart = new("^(?:/|\\.\\.?/|~/)", Options);
    private static readonly Regex LoneJwtPart = new("^eyJ[A-Za-z0-9_-]*=*$", Options);
    private static readonly Regex DigitRun = new("[0-9]+", Options);
    private static readonly Regex SegmentSeparators = new("[-_./+~=]", Options);
    private static readonly Regex Letter = new("[A-Za-z]", Options);
    private static readonly Regex Digit = new("[0-9]", Options);

    private static readonly string SecretKeyword =
        $"(?=[SsTtKkCcAa])(?<!{AnyCase("public")})(?<!{AnyCase("public")}[_.-])(?:{AnyCaseOf("secret", "token", "key", "credential", "auth")})[Ss]?" +
        $"(?:[_.-](?:{AnyCaseOf("base", "value", "prod", "live", "dev", "test", "staging")}))?";

    /// <summary>Group 1: the value after a secret keyword.</summary>
    private static readonly Regex SecretAssignment = new(
        $"{SecretKeyword}['\"\\]]?(?:[ \\t]*(?:=>|:=|[:=])[ \\t]*|[ \\t]+)['\"`]?([A-Za-z0-9+/=_.~-]{{16,}})", Options);

    private static readonly string PasswordKeyword = $"(?:{AnyCaseOf("password", "passwd", "passphrase", "pwd")}|[_.-]{AnyCase("pass")})";
    private const string UnquotedValue = "[^ \\t\\r\\n\"'`;,&<>]+";

    /// <summary>Groups: 1–3 the value after <c>=</c>, <c>:=</c> or <c>=&gt;</c> (double-quoted, single-quoted, bare); 4–6 after <c>:</c>.</summary>
    private static readonly Regex PasswordAssignment = new(
        $"{PasswordKeyword}['\"\\]]?[ \\t]*(?:(?:=>|:=|=)[ \\t]*(?:\"([^\"\\r\\n]*)\"|'([^'\\r\\n]*)'|({UnquotedValue}))" +
        $"|:[ \\t]*(?:\"([^\"\\r\\n]*)\"|'([^'\\r\\n]*)'|({UnquotedValue})(?=[ \\t]*(?:[,}}\\]#]|(?![^\\r\\n])))))", Options);

    private static readonly Regex PlaceholderWord = new(
        $"^(?:{AnyCaseOf("null", "none", "nil", "undefined", "true", "false", "empty", "required", "optional", "string", "text", "password", "passwd", "secret", "redacted", "hidden", "masked", "placeholder", "example", "changeme", "your_password", "yourpassword")})$",
        Options);
    private static readonly Regex PlaceholderStart = new("^(?:[$<{%!\\[]|#\\{)", Options);
    private static readonly Regex Mask = new("^(?:\\*+|x+|X+|\\.+|\u2022+)$", Options);
    private static readonly Regex EnvName = new("^[A-Z][A-Z0-9]*_[A-Z0-9_]*$", Options);
    private static readonly Regex DottedName = new("^[A-Za-z_]+(?:\\.[A-Za-z_]+)+$", Options);
    private static readonly Regex Call = new("^[A-Za-z_][A-Za-z0-9_.]*\\(", Options);

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

    /// <summary>Whether a value after a secret keyword looks generated rather than named (see the TypeScript table).</summary>
    public static bool LooksGenerated(string value)
    {
        ArgumentNullException.ThrowIfNull(value);
        if (value.Length < HighEntropyMinLength) return false;
        if (!Letter.IsMatch(value) || !Digit.IsMatch(value)) return false;
        if (Uuid.IsMatch(value) || PathStart.IsMatch(value) || LoneJwtPart.IsMatch(value)) return false;
        var digitRuns = DigitRun.Count(value);
        var base64Mixed = (value.Contains('+', StringComparison.Ordinal) || value.Contains('/', StringComparison.Ordinal))
            && value.Any(char.IsAsciiLetterLower) && value.Any(char.IsAsciiLetterUpper);
        if (digitRuns < 2 && !base64Mixed) return false;
        var mixedSegment = SegmentSeparators.Split(value).Any(seg => seg.Length > 3 && Letter.IsMatch(seg) && Digit.IsMatch(seg));
        if (!mixedSegment) return false;
        return ShannonEntropy(value) >= HighEntropyMinBits;
    }

    /// <summary>Whether a password value is a real one rather than a placeholder, a mask, a reference or a path.</summary>
    public static bool IsPasswordValue(string value)
    {
        ArgumentNullException.ThrowIfNull(value);
        if (value.Length < 4) return false;
        if (PlaceholderStart.IsMatch(value) || Mask.IsMatch(value) || PathStart.IsMatch(value)) return false;
        if (PlaceholderWord.IsMatch(value)) return false;
        return !EnvName.IsMatch(value) && !DottedName.IsMatch(value) && !Call.IsMatch(value);
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
        foreach (Match match in SecretAssignment.Matches(value))
            if (LooksGenerated(match.Groups[1].Value)) return true;
        return false;
    }

    private static bool PasswordAssigned(string value)
    {
        foreach (Match match in PasswordAssignment.Matches(value))
        {
            var password = match.Groups.Cast<Group>().Skip(1).FirstOrDefault(g => g.Success);
            if (password is not null && IsPasswordValue(password.Value)) return true;
        }
        return false;
    }

    /// <summary>Every detector, in the order refusals name them.</summary>
    public static IReadOnlyList<Detector> All { get; } =
    [
        RegexDetector("pem-private-key", DataClass.Secret, "-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
        RegexDetector("jwt", DataClass.Secret, $"{NotAfterAlnum}eyJ[A-Za-z0-9_-]{{8,}}\\.eyJ[A-Za-z0-9_-]{{8,}}\\.[A-Za-z0-9_-]*"),
        RegexDetector("api-key", DataClass.Secret, $"{NotAfterAlnum}(?:{string.Join("|", ApiKeyPatterns)})"),
        RegexDetector("bearer-token", DataClass.Secret,
            $"{NotAfterAlnum}(?:{AnyCase("bearer")}[ \\t]+(?![A-Z_]{{16,}}(?![A-Za-z0-9._~+/=-]))[A-Za-z0-9._~+/-]{{16,}}=*|{AnyCase("authorization")}['\"]?:[ \\t]*['\"]?{AnyCase("basic")}[ \\t]+[A-Za-z0-9+/]{{12,}}=*)"),
        RegexDetector("url-password", DataClass.Secret, "(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^ \\t\\r\\n/?#@:]{0,256}:(?![$<{%\\[])(?!\\*+@)[^ \\t\\r\\n/?#@]{1,256}@"),
        new Detector("password-assignment", DataClass.Secret, PasswordAssigned),
        new Detector("high-entropy", DataClass.Secret, HighEntropy),
        new Detector("card-number", DataClass.Secret, CardNumber),
        RegexDetector("ssn", DataClass.Personal, $"{NotAfterAlnum}(?!000|666|9[0-9]{{2}})[0-9]{{3}}-(?!00)[0-9]{{2}}-(?!0000)[0-9]{{4}}{NotBeforeAlnum}"),
    ];

    /// <summary>The detectors that fire on <paramref name="value"/>.</summary>
    public static IReadOnlyList<Detector> Detect(string value, IReadOnlyList<Detector>? detectors = null) =>
        (detectors ?? All).Where(d => d.Test(value)).ToList();
}
