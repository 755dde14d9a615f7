/** uploadPackage (src/upload.ts) against a scripted fetch: URL, headers, body, the answer, typed errors, refresh. */
import { describe, expect, it } from 'vitest';
import {
  AbortError,
  AgentGraphClient,
  AgentGraphError,
  InvalidResponseError,
  NetworkError,
  packageUploadUrl,
  uploadPackage,
  type LogEntry,
} from '../src/index.js';
import { errorTable, TestClock } from './helpers.js';

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

function scripted(...answers: ((sent: Sent) => Response | Promise<Response>)[]) {
  const sent: Sent[] = [];
  const fetchFn = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const s: Sent = {
      url: String(input),
      method: init?.method ?? 'GET',
      headers: init?.headers as Record<string, string>,
      body: init?.body,
    };
    sent.push(s);
    const answer = answers[sent.length - 1];
    if (!answer) throw new Error(`unexpected request ${sent.length}`);
    return answer(s);
  }) as typeof fetch;
  return { sent, fetchFn };
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}

const ACCEPTED = {
  releaseId: 'rel-1',
  plugin: 'web-search',
  version: '1.4.0',
  state: 'QUARANTINED',
  sizeBytes: 3,
  sha256: 'a'.repeat(64),
  sha512: 'b'.repeat(128),
};

function clientWith(fetchFn: typeof fetch, tokens: string[] = ['t1', 't2'], logs: LogEntry[] = []) {
  let i = 0;
  const refreshed: string[] = [];
  const client = new AgentGraphClient({
    baseUrl: 'https://api.example.test/graphql',
    errorTable,
    fetch: fetchFn,
    headers: { 'x-app': 'console' },
    clock: new TestClock(),
    logger: { log: (e) => logs.push(e) },
    tokenProvider: {
      getToken: async () => tokens[0]!,
      refresh: async () => {
        i += 1;
        refreshed.push(tokens[i]!);
        return tokens[i]!;
      },
    },
  });
  return { client, refreshed };
}

describe('uploadPackage', () => {
  it('derives the upload URL from the GraphQL endpoint', () => {
    expect(packageUploadUrl('https://api.example.test/graphql')).toBe(
      'https://api.example.test/catalog/packages',
    );
    expect(packageUploadUrl('https://x.test/api/graphql/?a=1')).toBe('https://x.test/api/catalog/packages');
    expect(packageUploadUrl('http://127.0.0.1:4000/')).toBe('http://127.0.0.1:4000/catalog/packages');
  });

  it("posts the package with the client's token and headers and returns the release and digests", async () => {
    const { sent, fetchFn } = scripted(() => json(202, ACCEPTED, { 'x-correlation-id': 'corr-1' }));
    const logs: LogEntry[] = [];
    const { client } = clientWith(fetchFn, ['t1'], logs);
    const body = new Uint8Array([1, 2, 3]);
    const result = await uploadPackage(client, { plugin: 'web-search', version: '1.4.0', body });
    expect(result).toEqual({
      status: 202,
      releaseId: 'rel-1',
      plugin: 'web-search',
      version: '1.4.0',
      state: 'QUARANTINED',
      sizeBytes: 3,
      digests: { sha256: ACCEPTED.sha256, sha512: ACCEPTED.sha512 },
      correlationId: 'corr-1',
    });
    expect(sent).toHaveLength(1);
    expect(sent[0]!.url).toBe('https://api.example.test/catalog/packages?plugin=web-search&version=1.4.0');
    expect(sent[0]!.method).toBe('POST');
    expect(sent[0]!.body).toBe(body);
    expect(sent[0]!.headers).toEqual({
      'x-app': 'console',
      'content-type': 'application/zip',
      accept: 'application/json',
      authorization: 'Bearer t1',
    });
    expect(logs).toEqual([
      expect.objectContaining({
        event: 'call',
        operation: 'UploadPackage',
        status: 202,
        attempts: 1,
        bytes: 3,
      }),
    ]);
    expect(JSON.stringify(logs)).not.toContain('t1');
  });

  it('sends a Blob with its own type', async () => {
    const { sent, fetchFn } = scripted(() => json(202, ACCEPTED));
    const { client } = clientWith(fetchFn);
    const blob = new Blob([new Uint8Array([1, 2, 3])], { type: 'application/x-zip-compressed' });
    await uploadPackage(client, { plugin: 'web-search', version: '1.4.0', body: blob });
    expect(sent[0]!.headers['content-type']).toBe('application/x-zip-compressed');
    expect(sent[0]!.body).toBe(blob);
  });

  it("maps the catalog's refusals to the table's typed errors", async () => {
    const cases = [
      { status: 413, code: 'PAYLOAD_TOO_LARGE', name: 'PayloadTooLargeError' },
      { status: 409, code: 'VERSION_CONFLICT', name: 'VersionConflictError' },
      { status: 404, code: 'NOT_FOUND', name: 'NotFoundError' },
      { status: 403, code: 'FORBIDDEN', name: 'ForbiddenError' },
    ];
    for (const c of cases) {
      const { sent, fetchFn } = scripted(() =>
        json(c.status, {
          errors: [{ message: `no: ${c.code}`, extensions: { code: c.code, correlationId: 'c9' } }],
        }),
      );
      const { client } = clientWith(fetchFn);
      const err = await uploadPackage(client, {
        plugin: 'p',
        version: '1.0.0',
        body: new Uint8Array(1),
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentGraphError);
      expect(err).toMatchObject({
        name: c.name,
        code: c.code,
        status: c.status,
        message: `no: ${c.code}`,
        correlationId: 'c9',
        retryable: false,
        giveUpReason: 'not-retryable',
      });
      expect(sent).toHaveLength(1);
    }
  });

  it('refreshes the token once on UNAUTHENTICATED and resends; a second refusal is thrown', async () => {
    const unauthenticated = () =>
      json(401, { errors: [{ message: 'token expired', extensions: { code: 'UNAUTHENTICATED' } }] });
    const first = scripted(unauthenticated, () => json(202, ACCEPTED));
    const ok = clientWith(first.fetchFn);
    await expect(
      uploadPackage(ok.client, { plugin: 'p', version: '1.0.0', body: new Uint8Array(3) }),
    ).resolves.toMatchObject({ releaseId: 'rel-1' });
    expect(first.sent.map((s) => s.headers['authorization'])).toEqual(['Bearer t1', 'Bearer t2']);

    const twice = scripted(unauthenticated, unauthenticated);
    const refused = clientWith(twice.fetchFn);
    await expect(
      uploadPackage(refused.client, { plugin: 'p', version: '1.0.0', body: new Uint8Array(3) }),
    ).rejects.toMatchObject({ code: 'UNAUTHENTICATED', attempts: 2, giveUpReason: 'unauthenticated' });
    expect(twice.sent).toHaveLength(2);
    expect(refused.refreshed).toEqual(['t2']);
  });

  it('does not resend after a network failure (the package may have arrived)', async () => {
    const { sent, fetchFn } = scripted(() => {
      throw new TypeError('fetch failed');
    });
    const { client } = clientWith(fetchFn);
    const err = await uploadPackage(client, { plugin: 'p', version: '1.0.0', body: new Uint8Array(1) }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).message).toContain('fetch failed');
    expect(sent).toHaveLength(1);
  });

  it('refuses a 2xx answer without the release as INVALID_RESPONSE', async () => {
    const { fetchFn } = scripted(() => new Response('<html>hello</html>', { status: 200 }));
    const { client } = clientWith(fetchFn);
    await expect(
      uploadPackage(client, { plugin: 'p', version: '1.0.0', body: new Uint8Array(1) }),
    ).rejects.toBeInstanceOf(InvalidResponseError);
  });

  it('stops with AbortError when the caller aborts', async () => {
    const controller = new AbortController();
    const { fetchFn } = scripted(
      (s) =>
        new Promise<Response>((_, reject) => {
          controller.abort();
          reject(Object.assign(new Error('aborted'), { name: 'AbortError', s }));
        }),
    );
    const { client } = clientWith(fetchFn);
    await expect(
      uploadPackage(client, {
        plugin: 'p',
        version: '1.0.0',
        body: new Uint8Array(1),
        signal: controller.signal,
      }),
    ).rejects.toBeInstanceOf(AbortError);
  });
});
