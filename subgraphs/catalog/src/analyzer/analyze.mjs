// @ts-check
/**
 * The analysis of one package, in memory: unpack with limits, validate manifest.json (zod), check it names the
 * plugin and version it was uploaded as, and statically check the code. Returns findings; any finding fails the
 * package. Runs inside the sandbox (sandbox-main.mjs); the bench also calls it directly.
 */
import { PluginManifest } from './manifest.mjs';
import { checkSources } from './static-checks.mjs';
import { unpack } from './unpack.mjs';

/** @typedef {{ rule: string, path?: string, message: string }} Finding */
/** @typedef {import('./unpack.mjs').UnpackLimits & { maxManifestBytes: number }} AnalysisLimits */

/**
 * @param {Buffer} zip
 * @param {{ plugin: string, version: string }} expected
 * @param {AnalysisLimits} limits
 * @returns {Promise<{ findings: Finding[], manifest: unknown, files: number, bytes: number }>}
 */
export async function analyzePackage(zip, expected, limits) {
  const { files, findings } = await unpack(zip, limits);
  let bytes = 0;
  for (const data of files.values()) bytes += data.length;
  if (findings.length) return { findings, manifest: null, files: files.size, bytes };
  const raw = files.get('manifest.json');
  if (!raw) {
    return {
      findings: [{ rule: 'invalid-manifest', message: 'manifest.json is missing at the package root' }],
      manifest: null,
      files: files.size,
      bytes,
    };
  }
  if (raw.length > limits.maxManifestBytes) {
    return {
      findings: [
        {
          rule: 'invalid-manifest',
          path: 'manifest.json',
          message: `manifest.json is over ${limits.maxManifestBytes} bytes`,
        },
      ],
      manifest: null,
      files: files.size,
      bytes,
    };
  }
  let json;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    return {
      findings: [
        { rule: 'invalid-manifest', path: 'manifest.json', message: 'manifest.json is not valid JSON' },
      ],
      manifest: null,
      files: files.size,
      bytes,
    };
  }
  const parsed = PluginManifest.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 5)
      .map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`);
    return {
      findings: [
        {
          rule: 'invalid-manifest',
          path: 'manifest.json',
          message: `manifest.json does not match its schema: ${issues.join('; ')}`,
        },
      ],
      manifest: null,
      files: files.size,
      bytes,
    };
  }
  const manifest = parsed.data;
  /** @type {Finding[]} */
  const out = [];
  if (manifest.name !== expected.plugin || manifest.version !== expected.version) {
    out.push({
      rule: 'manifest-mismatch',
      path: 'manifest.json',
      message: `manifest.json names ${manifest.name}@${manifest.version} but the package was uploaded as ${expected.plugin}@${expected.version}`,
    });
  }
  if (!files.has(manifest.main)) {
    out.push({
      rule: 'invalid-manifest',
      path: 'manifest.json',
      message: `main "${manifest.main}" is not in the package`,
    });
  }
  out.push(...checkSources(files, manifest.capabilities));
  return { findings: out, manifest, files: files.size, bytes };
}
