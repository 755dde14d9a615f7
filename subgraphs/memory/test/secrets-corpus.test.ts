/**
 * The server filter against the labelled corpus shared with the three SDKs (test/secrets-corpus/corpus.json, README
 * there): recall ≥ 0.97 and precision ≥ 0.95 under the default REJECT policy. A secret counts as found only when a
 * detector of its labelled rule (`sdkId`) fires; a harmless value must pass untouched. A failure lists every
 * misclassified case. Under REDACT, every found secret is replaced and the rest of the text kept.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AppError } from '@agentgraph/runtime';
import { filterWrite, redact, scan } from '../src/secrets/index.js';
import { DETECTORS } from '../src/secrets/detectors.js';

interface Case {
  id: string;
  label: 'secret' | 'harmless';
  detector?: string;
  value: string;
}

const CORPUS = new URL('../../../test/secrets-corpus/corpus.json', import.meta.url);
const { cases } = JSON.parse(readFileSync(CORPUS, 'utf8')) as { cases: Case[] };

/** The SDK rule ids whose detectors fire on `text` (each detector run alone, so overlaps do not hide one). */
const rulesFiring = (text: string) =>
  new Set(DETECTORS.filter((d) => scan(text, [d]).length > 0).map((d) => d.sdkId));

const write = (content: string) => ({ kind: 'note', content, tags: [], metadata: {} });

function refused(content: string): boolean {
  try {
    filterWrite(write(content), 'REJECT');
    return false;
  } catch (err) {
    if (err instanceof AppError && err.code === 'BAD_USER_INPUT') return true;
    throw err;
  }
}

describe('server secret filter on the labelled corpus', () => {
  it('reaches recall ≥ 0.97 and precision ≥ 0.95 under REJECT', () => {
    expect(cases.length).toBeGreaterThanOrEqual(200);
    let tp = 0;
    let fp = 0;
    let fn = 0;
    const wrong: string[] = [];
    for (const c of cases) {
      const isRefused = refused(c.value);
      if (c.label === 'secret') {
        if (isRefused && rulesFiring(c.value).has(c.detector!)) tp++;
        else {
          fn++;
          wrong.push(`missed ${c.id} (expected ${c.detector}, got [${[...rulesFiring(c.value)].join(',')}])`);
        }
      } else if (isRefused) {
        fp++;
        wrong.push(`false positive ${c.id} ([${scan(c.value).map((f) => f.detector)}])`);
      }
    }
    const recall = tp / (tp + fn);
    const precision = tp / (tp + fp);
    expect(
      recall >= 0.97 && precision >= 0.95,
      `recall ${recall.toFixed(3)}, precision ${precision.toFixed(3)}; misclassified:\n${wrong.join('\n')}`,
    ).toBe(true);
  });

  it('REDACT replaces every hit in a secret case and leaves harmless cases as they are', () => {
    for (const c of cases) {
      const { value } = filterWrite(write(c.value), 'REDACT');
      if (c.label === 'harmless' && scan(c.value).length === 0) expect(value.content, c.id).toBe(c.value);
      if (c.label === 'secret' && scan(c.value).length > 0) {
        expect(value.content, c.id).toMatch(/\[REDACTED:[a-z-]+\]/);
        expect(scan(value.content), c.id).toEqual([]);
      }
    }
  });

  it('the issue 18 cases: the two misses are refused, the eight look-alikes pass', () => {
    expect(refused('redis://:password@host')).toBe(true);
    expect(refused('password: value1234')).toBe(true);
    expect(redact('redis://:pw12345@host', scan('redis://:pw12345@host'))).toBe(
      'redis://:[REDACTED:url-password]@host',
    );
    expect(redact('password: hunter2!', scan('password: hunter2!'))).toBe(
      'password: [REDACTED:password-assignment]',
    );
    for (const text of [
      'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
      'VGhlIHF1YXJ0ZXJseSByZXBvcnQgaXMgYXR0YWNoZWQ7IG51bWJlcnMgYXJlIHVw',
      'pk_live_51H8xYzAbCdEfGhIjKlMnOpQrStUvWxYz0123456789',
      'api-server-7d9f8b6c5d-x2k4p',
      'https://github.com/OctoCat/Hello-World/commit/9fceb02d0ae598e95dc970b74767f19372d61af8',
      '/usr/local/lib/node_modules/typescript/lib/tsc.js',
      'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9',
      'Password=${DB_PASSWORD}',
    ])
      expect(refused(text), text).toBe(false);
  });
});
