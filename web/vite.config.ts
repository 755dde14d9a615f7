/**
 * The console's build: Preact with the automatic JSX runtime, the generated TypeScript SDK's browser entry, no
 * inline script (the gateway's Content-Security-Policy allows only same-origin files), hashed assets under /assets.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  resolve: {
    alias: { '@agentgraph/sdk': fileURLToPath(new URL('../sdks/typescript/src/index.ts', import.meta.url)) },
  },
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
