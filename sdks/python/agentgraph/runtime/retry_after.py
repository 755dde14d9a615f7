"""``Retry-After`` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date in its three forms; a date becomes
``date - now``, never below 0; anything else is ignored (None). Parsed by hand, like retry-after.ts."""
from __future__ import annotations

import calendar
import datetime as _dt
import re
from typing import Optional

MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_DAY = "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_LONG_DAY = "(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
_MONTH = "(" + "|".join(MONTHS) + ")"
_TIME = "([0-9]{2}):([0-9]{2}):([0-9]{2})"
IMF_FIXDATE = re.compile(f"^{_DAY}, ([0-9]{{2}}) {_MONTH} ([0-9]{{4}}) {_TIME} GMT$")
RFC850 = re.compile(f"^{_LONG_DAY}, ([0-9]{{2}})-{_MONTH}-([0-9]{{2}}) {_TIME} GMT$")
ASCTIME = re.compile(f"^{_DAY} {_MONTH} ([ 0-9][0-9]) {_TIME} ([0-9]{{4}})$")


def parse_http_date(value: str, now_ms: float) -> Optional[float]:
    """Epoch milliseconds of an HTTP-date, or None."""
    m = IMF_FIXDATE.match(value)
    if m:
        day, month, year, time = m.group(1), m.group(2), int(m.group(3)), (m.group(4), m.group(5), m.group(6))
    else:
        m = RFC850.match(value)
        if m:
            current = _dt.datetime.fromtimestamp(now_ms / 1000, _dt.timezone.utc).year
            year = (current // 100) * 100 + int(m.group(3))
            if year > current + 50:
                year -= 100
            day, month, time = m.group(1), m.group(2), (m.group(4), m.group(5), m.group(6))
        else:
            m = ASCTIME.match(value)
            if not m:
                return None
            month, day, year, time = m.group(1), m.group(2), int(m.group(6)), (m.group(3), m.group(4), m.group(5))
    d = int(day.strip())
    h, mi, s = (int(x) for x in time)
    if d < 1 or d > 31 or h > 23 or mi > 59 or s > 60:
        return None
    try:
        # Date.UTC rolls an impossible day over; timegm does the same arithmetic on a plain tuple.
        seconds = calendar.timegm((year, MONTHS.index(month) + 1, d, h, mi, min(s, 59), 0, 0, 0))
    except (OverflowError, ValueError):
        return None
    return float(seconds * 1000)


_DIGITS = re.compile("^[0-9]+$")


def parse_retry_after(header: Optional[str], now_ms: float) -> Optional[float]:
    """The wait a ``Retry-After`` header asks for, in ms, or None when absent or malformed."""
    if header is None:
        return None
    value = header.strip(" \t\r\n")
    if _DIGITS.match(value):
        return float(int(value) * 1000)
    date = parse_http_date(value, now_ms)
    if date is None:
        return None
    return max(0.0, date - now_ms)
