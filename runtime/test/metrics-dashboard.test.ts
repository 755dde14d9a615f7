/**
 * The shipped Grafana dashboard (docs/grafana/agentgraph.json) and the operations guide (docs/operations.md) against
 * what the servers really export: every expr names only metrics a registry holds (histograms by their _bucket,
 * _count and _sum series), every panel has a query, the dashboard has the shape Grafana imports, and every exported
 * metric of ours is documented.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../src/metrics/index.js';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: { expr: string; refId: string }[];
}
const dashboard = JSON.parse(read('docs/grafana/agentgraph.json')) as {
  title: string;
  uid: string;
  schemaVersion: number;
  panels: Panel[];
};

/** Every series name a scrape can carry, from a real registry (process metrics included). */
async function exported(): Promise<Set<string>> {
  const metrics = createMetrics({ service: 'dashboard-test' });
  const names = new Set<string>();
  for (const m of await metrics.registry.getMetricsAsJSON()) {
    names.add(m.name);
    if (String(m.type) === 'histogram') for (const s of ['_bucket', '_count', '_sum']) names.add(m.name + s);
    if (String(m.type) === 'summary') for (const s of ['_count', '_sum']) names.add(m.name + s);
  }
  return names;
}

describe('Grafana dashboard', () => {
  it('has the shape Grafana imports: title, uid, schema version, panels with unique ids, positions and queries', () => {
    expect(dashboard.title).toBe('agentgraph');
    expect(dashboard.uid).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dashboard.panels.length).toBeGreaterThan(10);
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    for (const p of dashboard.panels) {
      expect(p.type, p.title).toBe('timeseries');
      expect(p.gridPos.w, p.title).toBeGreaterThan(0);
      expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets!) expect(t.refId, p.title).toMatch(/^[A-Z]$/);
    }
  });

  it('queries only metrics the servers export', async () => {
    const names = await exported();
    const used = new Set<string>();
    for (const p of dashboard.panels) {
      for (const t of p.targets!) {
        const inExpr = t.expr.match(/\bagentgraph_[a-z0-9_]+/g) ?? [];
        expect(inExpr.length, `${p.title}: ${t.expr}`).toBeGreaterThan(0);
        for (const name of inExpr) {
          expect(names.has(name), `${p.title}: ${name} is not exported`).toBe(true);
          used.add(name);
        }
      }
    }
    // The checker itself can fail: a made-up name is caught.
    expect(names.has('agentgraph_made_up_total')).toBe(false);
    expect(used.size).toBeGreaterThan(10);
  });

  it('documents every metric of ours in docs/operations.md', async () => {
    const guide = read('docs/operations.md');
    const metrics = createMetrics({ service: 'doc-test', processMetrics: false });
    for (const m of await metrics.registry.getMetricsAsJSON())
      expect(guide, m.name).toContain(`\`${m.name}\``);
  });
});
