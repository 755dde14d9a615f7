import { describe, expect, it } from 'vitest';
import { parseHttpDate, parseRetryAfter } from '../src/index.js';

const NOW = Date.UTC(2023, 10, 14, 22, 13, 20); // Tue, 14 Nov 2023 22:13:20 GMT

describe('Retry-After', () => {
  it('reads delay-seconds exactly', () => {
    expect(parseRetryAfter('30', NOW)).toBe(30_000);
    expect(parseRetryAfter(' 0 ', NOW)).toBe(0);
  });

  it('reads the three HTTP-date forms relative to now', () => {
    expect(parseRetryAfter('Tue, 14 Nov 2023 22:13:32 GMT', NOW)).toBe(12_000);
    expect(parseRetryAfter('Tuesday, 14-Nov-23 22:14:20 GMT', NOW)).toBe(60_000);
    expect(parseRetryAfter('Tue Nov 14 22:13:25 2023', NOW)).toBe(5_000);
    expect(parseRetryAfter('Wed Nov  1 00:00:00 2023', NOW)).toBe(0);
  });

  it('never returns a negative wait for a date in the past', () => {
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', NOW)).toBe(0);
  });

  it('ignores malformed values (the client falls back to its backoff)', () => {
    for (const bad of [
      '',
      '-1',
      '1.5',
      'soon',
      '30s',
      'Tue, 14 Nov 2023 22:13:32 UTC',
      'Tue, 32 Nov 2023 22:13:32 GMT',
    ]) {
      expect(parseRetryAfter(bad, NOW), bad).toBeUndefined();
    }
    expect(parseRetryAfter(null, NOW)).toBeUndefined();
  });

  it('reads a two-digit RFC 850 year as the most recent past century within 50 years', () => {
    expect(new Date(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', NOW)!).getUTCFullYear()).toBe(1994);
    expect(new Date(parseHttpDate('Sunday, 06-Nov-30 08:49:37 GMT', NOW)!).getUTCFullYear()).toBe(2030);
  });
});
