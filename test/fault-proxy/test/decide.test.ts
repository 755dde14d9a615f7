import { describe, expect, it } from 'vitest';
import { FaultsSchema } from '../src/config.js';
import { randomPlan } from '../src/decide.js';
import { mulberry32 } from '../src/prng.js';
import { StreamCutter } from '../src/sse-cut.js';

describe('mulberry32', () => {
  it('reproduces the reference sequence for seed 1', () => {
    const rng = mulberry32(1);
    // Values of bryc's reference JavaScript mulberry32 (github.com/bryc/code, PRNGs.md) for seed 1.
    expect([rng(), rng(), rng()].map((x) => x.toFixed(10))).toEqual([
      '0.6270739406',
      '0.0027357212',
      '0.5274470400',
    ]);
  });
});

describe('randomPlan', () => {
  it('applies each probability to its share of requests (20 000 fingerprints, seed 9)', () => {
    const faults = FaultsSchema.parse({
      dropRequest: 0.1,
      dropResponse: 0.1,
      unavailable: 0.05,
      delay: { probability: 0.25, ms: 50 },
    });
    const counts = { dropRequest: 0, dropResponse: 0, s503: 0, s429: 0, delay: 0 };
    const n = 20_000;
    for (let i = 0; i < n; i++) {
      const plan = randomPlan(faults, 9, `fp-${i}`, 0);
      if (plan.kind === 'dropRequest') counts.dropRequest++;
      if (plan.dropResponse) counts.dropResponse++;
      if (plan.status === 503) counts.s503++;
      if (plan.status === 429) counts.s429++;
      if (plan.delayMs === 50) counts.delay++;
    }
    expect(counts.dropRequest / n).toBeCloseTo(0.1, 1);
    expect(counts.dropResponse / n).toBeCloseTo(0.1, 1);
    expect(counts.s503 / n).toBeCloseTo(0.05, 1);
    expect(counts.delay / n).toBeCloseTo(0.25, 1);
    expect(counts.s429).toBe(0);
  });
});

describe('StreamCutter', () => {
  const stream = Buffer.from(':\r\n\r\nid: 1\r\ndata: a\r\n\r\ndata: b\rdata: c\r\rdata: d\n\n');

  it('counts events across LF, CRLF and CR line ends, skipping comment-only blocks', () => {
    const cutter = new StreamCutter({ afterEvents: 2 });
    const step = cutter.feed(stream);
    expect(step.cut).toBe(true);
    expect(step.send.toString()).toBe(':\r\n\r\nid: 1\r\ndata: a\r\n\r\ndata: b\rdata: c\r\r');
  });

  it('finds the same cut when the bytes arrive one by one', () => {
    const cutter = new StreamCutter({ afterEvents: 3 });
    let sent = '';
    for (const byte of stream) {
      const step = cutter.feed(Buffer.from([byte]));
      sent += step.send.toString();
      if (step.cut) break;
    }
    expect(sent).toBe(stream.toString());
  });

  it('cuts after exactly N bytes across chunks', () => {
    const cutter = new StreamCutter({ afterBytes: 7 });
    expect(cutter.feed(Buffer.from('abcd'))).toEqual({ send: Buffer.from('abcd'), cut: false });
    expect(cutter.feed(Buffer.from('efghij'))).toEqual({ send: Buffer.from('efg'), cut: true });
  });
});
