/**
 * The detectors against the labelled corpus shared with the C# and Python SDKs and the server filter
 * (test/secrets-corpus/corpus.json, README there): recall ≥ 0.97 and precision ≥ 0.95, a secret counting as found only
 * when its labelled detector fires. A failure lists every misclassified case.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { detect } from '../src/index.js';

interface Case {
  id: string;
  label: 'secret' | 'harmless';
  detector?: string;
  value: string;
}

const CORPUS = new URL('../../../test/secrets-corpus/corpus.json', import.meta.url);
const { cases } = JSON.parse(readFileSync(CORPUS, 'utf8')) as { cases: Case[] };

describe('SDK detectors on the labelled corpus', () => {
  it('reach recall ≥ 0.97 and precision ≥ 0.95', () => {
    expect(cases.length).toBeGreaterThanOrEqual(200);
    let tp = 0;
    let fp = 0;
    let fn = 0;
    const wrong: string[] = [];
    for (const c of cases) {
      const ids = detect(c.value).map((d) => d.id);
      if (c.label === 'secret') {
        if (ids.includes(c.detector!)) tp++;
        else {
          fn++;
          wrong.push(`missed ${c.id} (expected ${c.detector}, got [${ids.join(',')}])`);
        }
      } else if (ids.length > 0) {
        fp++;
        wrong.push(`false positive ${c.id} ([${ids.join(',')}])`);
      }
    }
    const recall = tp / (tp + fn);
    const precision = tp / (tp + fp);
    expect(
      recall >= 0.97 && precision >= 0.95,
      `recall ${recall.toFixed(3)}, precision ${precision.toFixed(3)}; misclassified:\n${wrong.join('\n')}`,
    ).toBe(true);
  });
});
