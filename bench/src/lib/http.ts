/** One-off GraphQL requests from the orchestrator: readiness polling, seeding, and the pre-flight check of a target. */
import { sleep } from './proc.js';

export interface GraphQLReply {
  status: number;
  text: string;
  json: { data?: unknown; errors?: { message: string; extensions?: Record<string, unknown> }[] } | null;
}

export async function postGraphQL(
  url: string,
  query: string,
  variables: Record<string, unknown> | undefined,
  headers: Record<string, string> = {},
): Promise<GraphQLReply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  const text = await res.text();
  let json: GraphQLReply['json'] = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON: left null, the caller reports the text */
  }
  return { status: res.status, text, json };
}

/** Polls until the target answers the query with 200 and no errors; throws with the last answer after timeoutMs. */
export async function waitForGraphQL(
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs = 60_000,
  isAlive: () => boolean = () => true,
): Promise<GraphQLReply> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (!isAlive()) throw new Error(`the process serving ${url} exited`);
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
        body,
      });
      const text = await res.text();
      const json = JSON.parse(text) as GraphQLReply['json'];
      if (res.status === 200 && json && !json.errors) return { status: res.status, text, json };
      last = `${res.status} ${text.slice(0, 500)}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(250);
  }
  throw new Error(`${url} did not answer the bench query correctly within ${timeoutMs} ms; last: ${last}`);
}

/** Stable JSON for comparing answers across targets (key order ignored). */
export function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const keys = Object.keys(value as object).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
}
