/**
 * The orchestrator's helpers before measuring: waiting for a process's HTTP endpoint, request/answer with the services
 * process over IPC, and the check that a revoked token is refused through the gateway.
 */
import { sleep, type Child } from '../lib/proc.js';

export async function waitForHttp(url: string, child: Child, timeoutMs: number): Promise<void> {
  let alive = true;
  void child.exited.then(() => (alive = false));
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (!alive) throw new Error(`${child.name} exited before ${url} answered; see ${child.logFile}`);
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(250);
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms (last: ${last}); see ${child.logFile}`);
}

/** Request/answer over the services process's IPC channel. */
export function rpc(services: Child) {
  let next = 1;
  // Enrolment approves all devices at once: one pair of listeners per pending answer.
  services.proc.setMaxListeners(1000);
  return async (req: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const id = next++;
    const answer = services.message<Record<string, unknown>>(
      (m) => (m as { id?: number }).id === id,
      120_000,
    );
    services.send({ ...req, id });
    const a = await answer;
    if (a['type'] === 'error')
      throw new Error(`services: ${String(req['type'])} failed: ${String(a['error'])}`);
    return a;
  };
}

/**
 * A token the bench revokes (a fresh copy of the device token, its jti revoked) must be refused through the gateway
 * within 1 s: checks that the measured verifiers really consult a live revocation list.
 */
export async function revokedTokenRefused(
  ask: ReturnType<typeof rpc>,
  url: string,
  body: string,
  template: string,
): Promise<{ refused: boolean; status: number; code: string | null; afterMs: number }> {
  const [token] = (await ask({ type: 'mint', template, count: 1 }))['tokens'] as string[];
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
  const first = await fetch(url, { method: 'POST', headers, body });
  await first.arrayBuffer();
  if (first.status !== 200)
    throw new Error(`a fresh token was refused before revocation: HTTP ${first.status}`);
  const jti = JSON.parse(Buffer.from(token!.split('.')[1]!, 'base64url').toString('utf8')).jti as string;
  await ask({ type: 'revocations', count: 0, jtis: [jti] });
  const t0 = Date.now();
  let status = 200;
  let code: string | null = null;
  while (Date.now() - t0 < 1000) {
    const res = await fetch(url, { method: 'POST', headers, body });
    const json = (await res.json().catch(() => null)) as {
      errors?: { extensions?: { code?: string } }[];
    } | null;
    status = res.status;
    code = json?.errors?.[0]?.extensions?.code ?? null;
    if (status !== 200 || code) return { refused: true, status, code, afterMs: Date.now() - t0 };
    await sleep(20);
  }
  return { refused: false, status, code, afterMs: Date.now() - t0 };
}
