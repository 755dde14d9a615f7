/** The secret and personal-data filter (see filter.ts); detectors.ts is the table, scan.ts runs it. */
export { DETECTORS, type Detector } from './detectors.js';
export { redact, scan, type Finding } from './scan.js';
export { filterWrite, type FilterOutcome, type Json, type SecretPolicy } from './filter.js';
