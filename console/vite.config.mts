import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/** The console, built into dist/console and served by the API process at /console. */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    // Nothing inline: the content security policy allows scripts and styles from the service only.
    assetsInlineLimit: 0,
    reportCompressedSize: true,
    rolldownOptions: {
      // React Query marks its modules "use client" (for React Server Components); a browser bundle has no use for it.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
});
