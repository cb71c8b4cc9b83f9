// Builds the operator's page (ui/) into dist/ui, served by `baton serve` at /ui/ (src/api/operatorPage.ts).
// Everything it needs is bundled here: the page fetches nothing from the internet when it runs.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/ui/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    // The graph layout library is most of the page's weight; it is loaded with the page, once.
    chunkSizeWarningLimit: 1024,
  },
});
