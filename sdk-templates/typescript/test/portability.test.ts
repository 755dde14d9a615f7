/**
 * The runtime must stand alone and run in browsers: outside files named *.node.ts it imports only relative
 * modules and `jose` (no node: builtins, no other packages, nothing from the rest of the repository).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../src/index.js';

const srcDir = new URL('../src/', import.meta.url);
const files = (readdirSync(srcDir, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).sort();
const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

describe('runtime portability', () => {
  it('has source files to check', () => {
    expect(files).toContain('index.ts');
  });

  for (const file of files) {
    it(`${file} imports only what ${file.endsWith('.node.ts') ? 'Node' : 'a browser'} has`, () => {
      const text = readFileSync(new URL(file, srcDir), 'utf8');
      for (const match of text.matchAll(IMPORT)) {
        const spec = (match[1] ?? match[2])!;
        if (spec.startsWith('.')) {
          expect(spec.includes('../../'), `${file} → ${spec} leaves the runtime`).toBe(false);
          continue;
        }
        if (file.endsWith('.node.ts') && (spec.startsWith('node:') || spec === 'better-sqlite3')) continue;
        expect(spec, `${file} imports ${spec}`).toBe('jose');
      }
    });
  }

  it('systemClock sleeps with a real timer and stops at once on abort', async () => {
    const controller = new AbortController();
    const sleeping = systemClock.sleep(60_000, controller.signal);
    controller.abort();
    await expect(sleeping).rejects.toMatchObject({ name: 'AbortError' });
    await expect(systemClock.sleep(1)).resolves.toBeUndefined();
  });
});
