/**
 * The exactly-once run (test/src/exactly-once.ts), end to end, for the Python SDK: the generated SDK with its durable outbox (stdlib
 * sqlite3; sdks/python/samples/outbox_poster.py, run with Debian's /usr/bin/python3 and its apt packages) posts
 * 2,000 messages to 10 rooms through the fault-injecting proxy (the TypeScript run's mix: 10 % of requests dropped,
 * 10 % of responses dropped after the server committed, 5 % answered 503 with Retry-After) into the real platform;
 * the client process is killed (SIGKILL) mid-run and started again on the same outbox file. The server holds each
 * message exactly once, and every room's messages are in enqueue order.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startExactlyOnceBed, TOTAL, type ExactlyOnceBed } from '../src/exactly-once.js';
import { PYTHON, PYTHON_SDK_ENV } from './fixtures/python-sdk.js';

const POSTER = fileURLToPath(new URL('../../sdks/python/samples/outbox_poster.py', import.meta.url));
const PYTHON_ENV = { ...process.env, ...PYTHON_SDK_ENV };
let bed: ExactlyOnceBed;

beforeAll(async () => {
  bed = await startExactlyOnceBed('python-exactly-once', 10);
}, 300_000);
afterAll(async () => {
  await bed?.close();
});

describe('Python SDK: exactly once over a bad network, across a client crash', () => {
  it(`delivers ${TOTAL} messages exactly once, in order per room`, async () => {
    const report = await bed.run({ command: PYTHON, prefix: [POSTER], env: PYTHON_ENV });
    console.log(JSON.stringify({ sdk: 'python', ...report }));
  }, 600_000);
});
