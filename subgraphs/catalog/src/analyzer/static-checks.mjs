// @ts-check
/**
 * Static checks of a package's code (.js, .mjs, .cjs): forbidden modules (processes, raw sockets, workers, vm),
 * eval and new Function, dynamic import/require with a computed name, and capabilities used but not declared in
 * the manifest. Pattern-based, not a parser: it sees what the code names literally. Code that builds module names
 * at run time is refused as "dynamic-import" rather than guessed at; string tricks that avoid every pattern (e.g.
 * reaching `process.binding`) are out of its reach, which is why desktops also run plugins with their own limits.
 */

/** @typedef {{ rule: string, path?: string, message: string }} Finding */

/** Modules no plugin may load, whatever it declares. */
export const FORBIDDEN_MODULES = [
  'child_process',
  'net',
  'dgram',
  'worker_threads',
  'vm',
  'cluster',
  'inspector',
  'tls',
  'http2',
];

/** Modules (and globals) that need a declared capability. */
const CAPABILITY_MODULES = /** @type {Record<string, string>} */ ({
  fs: 'fs',
  'fs/promises': 'fs',
  http: 'network',
  https: 'network',
  undici: 'network',
  ws: 'network',
  clipboardy: 'clipboard',
  'node-notifier': 'notifications',
});
const CAPABILITY_GLOBALS = [
  { pattern: /\bfetch\s*\(/, capability: 'network', what: 'fetch()' },
  { pattern: /\bnew\s+WebSocket\s*\(/, capability: 'network', what: 'WebSocket' },
  { pattern: /\bXMLHttpRequest\b/, capability: 'network', what: 'XMLHttpRequest' },
  { pattern: /\bnavigator\s*\.\s*clipboard\b/, capability: 'clipboard', what: 'navigator.clipboard' },
  { pattern: /\bnew\s+Notification\s*\(/, capability: 'notifications', what: 'Notification' },
];

const STATIC_SPECIFIERS = [
  /\bimport\s+(?:[\w*{}\s,$]+\s+from\s+)?["']([^"']+)["']/g,
  /\bexport\s+(?:[\w*{}\s,$]+\s+)?from\s+["']([^"']+)["']/g,
  /\brequire\s*\(\s*["']([^"']+)["']\s*\)/g,
  /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g,
];
const DYNAMIC = [
  /\brequire\s*\(\s*(?!["'][^"']*["']\s*\))/,
  /\bimport\s*\(\s*(?!["'][^"']*["']\s*\))/,
  /\bprocess\s*\.\s*(?:binding|dlopen|_linkedBinding)\b/,
  /\bmodule\s*\.\s*constructor\b/,
];
const EVAL = [/(?<![\w$.])eval\s*\(/, /\bnew\s+Function\s*\(/, /(?<![\w$.])Function\s*\(\s*["'`]/];

const CODE = /\.(?:js|mjs|cjs)$/;

/** @param {string} specifier */
function moduleName(specifier) {
  return specifier.startsWith('node:') ? specifier.slice(5) : specifier;
}

/**
 * @param {Map<string, Buffer>} files
 * @param {readonly string[]} declared capabilities from the manifest
 * @returns {Finding[]}
 */
export function checkSources(files, declared) {
  /** @type {Finding[]} */
  const findings = [];
  const seen = new Set();
  const add = (/** @type {Finding} */ f) => {
    const key = `${f.rule}|${f.path}|${f.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      findings.push(f);
    }
  };
  for (const [path, data] of files) {
    if (!CODE.test(path)) continue;
    const text = data.toString('utf8');
    for (const re of STATIC_SPECIFIERS) {
      for (const m of text.matchAll(re)) {
        const name = moduleName(m[1] ?? '');
        const base = name.split('/')[0] ?? name;
        if (FORBIDDEN_MODULES.includes(name) || FORBIDDEN_MODULES.includes(base)) {
          add({ rule: 'forbidden-import', path, message: `loads "${name}", which plugins may not use` });
          continue;
        }
        const capability = CAPABILITY_MODULES[name];
        if (capability && !declared.includes(capability)) {
          add({
            rule: 'undeclared-capability',
            path,
            message: `loads "${name}" (capability "${capability}") but the manifest does not declare "${capability}"`,
          });
        }
      }
    }
    for (const re of DYNAMIC) {
      if (re.test(text))
        add({ rule: 'dynamic-import', path, message: 'loads code by a computed name or a native binding' });
    }
    for (const re of EVAL) {
      if (re.test(text))
        add({ rule: 'eval', path, message: 'evaluates strings as code (eval / new Function)' });
    }
    for (const g of CAPABILITY_GLOBALS) {
      if (g.pattern.test(text) && !declared.includes(g.capability)) {
        add({
          rule: 'undeclared-capability',
          path,
          message: `uses ${g.what} (capability "${g.capability}") but the manifest does not declare "${g.capability}"`,
        });
      }
    }
  }
  return findings;
}
