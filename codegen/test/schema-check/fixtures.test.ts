import { afterAll, describe, expect, it } from 'vitest';
import { renderMarkdown } from '../../src/schema-check/report.js';
import { CASES } from './fixtures.js';
import { removeFixtureDirs, runCase } from './harness.js';

afterAll(removeFixtureDirs);

const coords = (fs: Array<{ scope: string; coordinate?: string }>) =>
  [...new Set(fs.filter((f) => f.scope === 'api').map((f) => f.coordinate ?? ''))].sort();

describe('schema check fixtures', () => {
  it('has at least 25 schema pairs', () => expect(CASES.length).toBeGreaterThanOrEqual(25));

  for (const c of CASES) {
    it(c.name, async () => {
      const r = await runCase(c);
      const e = c.expect;
      if (e.breaking) expect(coords(r.breaking)).toEqual([...e.breaking].sort());
      if (e.dangerous) expect(coords(r.dangerous)).toEqual([...e.dangerous].sort());
      if (e.safe) expect(coords(r.safe)).toEqual(expect.arrayContaining(e.safe));
      if (e.violations)
        expect([...new Set(r.violations.map((v) => `${v.rule} ${v.coordinate}`))].sort()).toEqual(
          [...e.violations].sort(),
        );
      for (const a of e.allowed ?? [])
        expect(r.safe.find((f) => f.coordinate === a && f.scope === 'api')?.allowedBecause).toMatch(/\w{3}/);
      const all = [...r.breaking, ...r.dangerous, ...r.safe].filter((f) => f.scope === 'api');
      for (const [coordinate, methods] of Object.entries(e.touches ?? {})) {
        const f = all.find((x) => x.coordinate === coordinate);
        expect(f, `a finding at ${coordinate}`).toBeDefined();
        const named = f!.touches.map((t) => (t.sdkMethod ? `${t.sdkMethod}()` : t.operation));
        expect(named).toEqual(expect.arrayContaining(methods));
        const md = renderMarkdown(r);
        for (const m of methods) expect(md).toContain(`\`${m}\``);
      }
      expect(r.ok).toBe(e.ok);
    });
  }
});
