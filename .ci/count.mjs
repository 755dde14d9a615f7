// Counts one vitest run from its JSON report: `node .ci/count.mjs <report.json> <vitest exit code>` prints
// "<passed> <failed>". A test file that fails to load (no test in it fails, but the file does) counts as one
// failure; so does a run that exits non-zero without any failure in its report (crash, unhandled error,
// timeout), and a missing or unreadable report.
import { readFileSync } from 'node:fs';

const [file, exitCode] = process.argv.slice(2);
let passed = 0;
let failed = 0;
try {
  const report = JSON.parse(readFileSync(file, 'utf8'));
  passed = report.numPassedTests ?? 0;
  failed = report.numFailedTests ?? 0;
  for (const suite of report.testResults ?? []) {
    const failedInFile = (suite.assertionResults ?? []).filter((t) => t.status === 'failed').length;
    if (suite.status === 'failed' && failedInFile === 0) {
      failed += 1;
      console.error(
        `  file failed without a failing test: ${suite.name}: ${(suite.message ?? '').split('\n')[0]}`,
      );
    }
  }
  if (Number(exitCode) !== 0 && failed === 0) {
    failed += 1;
    console.error(`  vitest exited with ${exitCode} but its report lists no failure; counted as one failure`);
  }
} catch (err) {
  failed += 1;
  console.error(`  no usable report ${file} (${err.message}); counted as one failure`);
}
console.log(`${passed} ${failed}`);
