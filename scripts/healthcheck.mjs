#!/usr/bin/env node
// The container health check (Dockerfile HEALTHCHECK, compose.yaml `healthcheck`): GET http://127.0.0.1:<port>/healthz
// (liveness, no I/O) and exit 0 on a 200 within 8 s, else 1. The port is the argument, else GATEWAY_PORT, else 4000
// (the image's default command is the gateway): `node scripts/healthcheck.mjs 4101` checks identity.
const port = Number(process.argv[2] ?? process.env.GATEWAY_PORT ?? 4000);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  process.stderr.write(`healthcheck: not a port: ${process.argv[2] ?? process.env.GATEWAY_PORT}\n`);
  process.exit(1);
}
const timeout = new AbortController();
setTimeout(() => timeout.abort(new Error('no answer within 8 s')), 8000).unref();
try {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: timeout.signal });
  process.exit(res.status === 200 ? 0 : 1);
} catch (err) {
  process.stderr.write(`healthcheck: ${err.message}\n`);
  process.exit(1);
}
