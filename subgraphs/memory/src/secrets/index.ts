/** The secret and personal-data filter (see filter.ts); detectors.ts is the table, scan.ts runs it. */
export { redact, scan } from './scan.js';
export { filterWrite, type Json } from './filter.js';
