/**
 * Follow a room live. `createSubscriptions(sdk.client)` streams with the client's own endpoint (`<baseUrl>/stream`),
 * fetch, privacy policy and token provider, which it asks for a token on every connect and reconnect. It resumes
 * after the last message handled (`afterSeq`), drops duplicates, and reconnects with backoff when a stream breaks.
 */
import { type AgentGraph, createSubscriptions, type OnRoomMessageData, subscriptions } from '../src/index.js';

export async function followRoom(
  sdk: AgentGraph,
  roomId: string,
  count: number,
  onMessage: (seq: number, body: string) => void = (seq, body) => console.log(seq, body),
  signal?: AbortSignal,
) {
  const stream = createSubscriptions(sdk.client); // the client's endpoint, token provider, fetch, privacy policy
  const bodies: string[] = [];
  for await (const item of stream.subscribe(
    subscriptions.OnRoomMessage,
    { roomId },
    {
      resume: { cursorVariable: 'afterSeq', seqOf: (message) => message.seq, after: 0 }, // 0: from the first message
      select: (data: OnRoomMessageData) => data.roomMessages,
      ...(signal ? { signal } : {}),
    },
  )) {
    if (item.type === 'event') {
      bodies.push(item.event.body);
      onMessage(item.seq, item.event.body);
    }
    if (item.seq >= count) break; // leaving the loop closes the stream
  }
  return bodies;
}
