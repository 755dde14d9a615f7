/**
 * `Retry-After` (RFC 9110 §10.2.3): either delay-seconds (1*DIGIT) or an HTTP-date in one of the three forms of
 * §5.6.7 (IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, obsolete RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`, asctime
 * `Sun Nov  6 08:49:37 1994`). A date becomes `date - now`, never below 0. Anything else is ignored (undefined):
 * the client then uses its own backoff. Parsed by hand, not Date.parse, so every SDK reads the same values.
 */
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '([0-9]{2}):([0-9]{2}):([0-9]{2})';
const IMF_FIXDATE = new RegExp(`^${DAY}, ([0-9]{2}) ${MONTH} ([0-9]{4}) ${TIME} GMT$`);
const RFC850 = new RegExp(`^${LONG_DAY}, ([0-9]{2})-${MONTH}-([0-9]{2}) ${TIME} GMT$`);
const ASCTIME = new RegExp(`^${DAY} ${MONTH} ([ 0-9][0-9]) ${TIME} ([0-9]{4})$`);

interface DateParts {
  year: number;
  month: string;
  day: string;
  time: [string, string, string];
}

function dateParts(value: string, nowMs: number): DateParts | undefined {
  let m = IMF_FIXDATE.exec(value);
  if (m) return { day: m[1]!, month: m[2]!, year: Number(m[3]), time: [m[4]!, m[5]!, m[6]!] };
  m = RFC850.exec(value);
  if (m) {
    // RFC 9110: a two-digit year more than 50 years in the future is the most recent past year with those digits.
    const currentYear = new Date(nowMs).getUTCFullYear();
    let year = Math.floor(currentYear / 100) * 100 + Number(m[3]);
    if (year > currentYear + 50) year -= 100;
    return { day: m[1]!, month: m[2]!, year, time: [m[4]!, m[5]!, m[6]!] };
  }
  m = ASCTIME.exec(value);
  if (m) return { month: m[1]!, day: m[2]!, year: Number(m[6]), time: [m[3]!, m[4]!, m[5]!] };
  return undefined;
}

/** Epoch milliseconds of an HTTP-date, or undefined. */
export function parseHttpDate(value: string, nowMs: number): number | undefined {
  const parts = dateParts(value, nowMs);
  if (!parts) return undefined;
  const day = Number(parts.day.trim());
  const [h, mi, s] = parts.time.map(Number) as [number, number, number];
  if (day < 1 || day > 31 || h > 23 || mi > 59 || s > 60) return undefined;
  // A leap second (60) counts as 59: Date.UTC has no leap seconds.
  return Date.UTC(parts.year, MONTHS.indexOf(parts.month), day, h, mi, Math.min(s, 59));
}

/** The wait a `Retry-After` header asks for, in milliseconds, or undefined when absent or malformed. */
export function parseRetryAfter(header: string | null | undefined, nowMs: number): number | undefined {
  if (header === null || header === undefined) return undefined;
  const value = header.trim();
  if (/^[0-9]+$/.test(value)) return Number(value) * 1000;
  const date = parseHttpDate(value, nowMs);
  if (date === undefined) return undefined;
  return Math.max(0, date - nowMs);
}
