/**
 * The console's build: Preact with the automatic JSX runtime, the generated TypeScript SDK's browser entry, no
 * inline script (the gateway's Content-Security-Policy allows only same-origin files), hashed assets under /assets.
 */
import { fileURLToPath } from 'node:url';
import { defaultClientConditions, defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  // @agentgraph/sdk and its runtime are workspace packages: this condition resolves them to their sources (no build
  // step), `browser` to the runtime's browser entry (no better-sqlite3 stores, no node: imports).
  resolve: { conditions: ['@agentgraph/source', ...defaultClientConditions] },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
  },
});
