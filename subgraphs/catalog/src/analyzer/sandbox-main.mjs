// @ts-check
/**
 * Entry of the analyzer process. Started by run-sandbox.ts as
 *   node --experimental-permission --allow-fs-read=<package>,<analyzer code> --max-old-space-size=<MB>
 *        sandbox-main.mjs <package path> <json: expected plugin/version and limits>
 * so it can read the package and its own code and nothing else, cannot write, spawn processes or start workers.
 * It reads the package into memory, analyses it and writes one JSON line to stdout:
 *   {"ok": true, "findings": [...], "files": n, "bytes": n}  or  {"ok": false, "error": "..."}.
 * It opens no sockets (Node 20's permission model cannot forbid that; see the README).
 */
import { readFileSync } from 'node:fs';
import { analyzePackage } from './analyze.mjs';

async function main() {
  const [packagePath, optionsJson] = process.argv.slice(2);
  if (!packagePath || !optionsJson) throw new Error('usage: sandbox-main.mjs <package> <options json>');
  const options = JSON.parse(optionsJson);
  const zip = readFileSync(packagePath);
  const result = await analyzePackage(zip, options.expected, options.limits);
  process.stdout.write(
    JSON.stringify({ ok: true, findings: result.findings, files: result.files, bytes: result.bytes }) + '\n',
  );
}

main().catch((err) => {
  process.stdout.write(
    JSON.stringify({ ok: false, error: String(err?.message ?? err).slice(0, 500) }) + '\n',
  );
  process.exitCode = 2;
});
