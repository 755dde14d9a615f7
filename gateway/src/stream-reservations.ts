/**
 * graphql-sse's single-connection mode on the gateway's /graphql/stream (PROTOCOL.md of graphql-sse, "Single
 * connection mode"): a client makes a reservation (PUT → 201 and a token), opens one event stream with it (GET,
 * `Accept: text/event-stream`, the token in `x-graphql-event-stream-token` or `?token=`), starts each subscription
 * with a short request naming the token and an `extensions.operationId` (→ 202, its events come on the event stream as
 * `{"id", "payload"}`), and stops one with `DELETE ?operationId=`. Each operation is carried to its subgraph as an
 * operation of the gateway's shared connection there (stream-mux.ts), with the token of the request that started it.
 *
 * What the spec leaves to the server, decided here:
 * - A reservation belongs to the principal that made it (tenant, principal, device, OAuth client of the access token):
 *   every request naming it must carry a valid access token of the same principal (a refreshed token is fine), else
 *   it is answered as if the reservation did not exist (404). The reservation token alone opens nothing.
 * - Limits: reservations per principal, operations per reservation, and a reservation not fulfilled by an event
 *   stream within `pendingTtlMs` is dropped. One event stream per reservation at a time (another: 409).
 * - The reservation ends with its event stream: its operations are cancelled upstream.
 *
 * This module holds the state and the wire format; stream.ts routes the requests here after its own checks.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { AuthContext } from '@agentgraph/runtime';
import { MAX_CLIENT_BACKLOG_BYTES, type StreamEndListener } from './stream-client.js';
import type { MuxOperation } from './stream-mux.js';
import type { OpenStream } from './stream-relay.js';

/** graphql-sse's header naming a reservation. */
export const RESERVATION_TOKEN_HEADER = 'x-graphql-event-stream-token';

export interface ReservationLimits {
  /** Reservations one principal may hold at once (pending or connected). */
  perPrincipal: number;
  /** Operations running at once on one reservation. */
  operations: number;
  /** A reservation whose event stream has not connected after this long is dropped. */
  pendingTtlMs: number;
}

export const DEFAULT_RESERVATION_LIMITS: ReservationLimits = {
  perPrincipal: 16,
  operations: 1000,
  pendingTtlMs: 30_000,
};

/** What every reservation shares: masking for the client, and the handler's registry of open streams. */
export interface ReservationHost {
  maskErrors(data: string, correlationId: string): string;
  failureEvent(reason: string, correlationId: string): string;
  /** The reservation's event stream opened (`true`) or ended (`false`). */
  streamChanged(stream: Reservation, open: boolean): void;
}

/** Where an operation runs upstream (stream-mux.ts's StreamMux): told when the client's side is over. */
export interface Upstream {
  cancel(id: number): void;
}

/** Who may use a reservation: the same principal of the same tenant, from the same device and OAuth client. */
export function principalKey(auth: AuthContext): string {
  return [auth.tenantId, auth.principalId, auth.deviceId ?? '', auth.clientId ?? ''].join('\n');
}

/** One subscription of a reservation, as an operation of the shared upstream connection. */
export class ReservedOperation implements MuxOperation {
  /** The gateway's upstream connection that carries it, and its id there, once the subgraph accepted it. */
  upstream: Upstream | undefined = undefined;
  upstreamId: number | undefined = undefined;
  /** The operation id as the client's text; `idJson` its JSON form, written in every event. */
  private readonly idJson: string;
  private ended = false;

  constructor(
    readonly id: string,
    readonly reservation: Reservation,
    readonly correlationId: string,
  ) {
    this.idJson = JSON.stringify(id);
  }

  next(payload: string): void {
    if (this.ended) return;
    const host = this.reservation.host;
    const data = payload.includes('"errors"') ? host.maskErrors(payload, this.correlationId) : payload;
    this.reservation.send(`event: next\ndata: {"id":${this.idJson},"payload":${data}}\n\n`);
  }

  complete(): void {
    this.end(null);
  }

  fail(reason: string): void {
    this.end(reason);
  }

  /** Ends the operation for the client: a last coded event when it failed, then `complete`; forgotten upstream. */
  end(failure: string | null): void {
    if (this.ended) return;
    this.ended = true;
    const host = this.reservation.host;
    if (failure !== null)
      this.reservation.send(
        `event: next\ndata: {"id":${this.idJson},"payload":${host.failureEvent(failure, this.correlationId)}}\n\n`,
      );
    this.reservation.send(`event: complete\ndata: {"id":${this.idJson}}\n\n`);
    this.reservation.forget(this);
    this.cancelUpstream();
  }

  /** The reservation is gone (its event stream closed): nothing more is written; only the upstream is told. */
  drop(): void {
    if (this.ended) return;
    this.ended = true;
    this.cancelUpstream();
  }

  /** A no-op when the subgraph ended the operation itself (the mux forgot it then). */
  private cancelUpstream(): void {
    if (this.upstream && this.upstreamId !== undefined) this.upstream.cancel(this.upstreamId);
  }
}

/** A reservation and, once connected, its event stream. */
export class Reservation implements OpenStream {
  readonly operations = new Map<string, ReservedOperation>();
  private response: ServerResponse | null = null;
  /** Events written before the event stream connected (an operation may start first), up to the backlog limit. */
  private held: string[] | null = null;
  private heldBytes = 0;
  private closed = false;
  /** The opener's end callback (gateway.ts: the event stream request's log line). */
  private onEnd: StreamEndListener | undefined = undefined;

  constructor(
    readonly token: string,
    readonly principal: string,
    readonly createdAt: number,
    readonly host: ReservationHost,
    private readonly registry: Reservations,
  ) {}

  get res(): ServerResponse {
    return this.response!;
  }

  get connected(): boolean {
    return this.response !== null;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** The event stream of this reservation: answered by the caller (200 and the SSE headers) before this. */
  connect(res: ServerResponse, onEnd?: StreamEndListener): void {
    this.response = res;
    this.onEnd = onEnd;
    res.once('close', () => this.close());
    // A comment first, as graphql-sse's server sends: some browsers do not take the flushed headers alone.
    res.write(':\n\n');
    const held = this.held;
    this.held = null;
    this.heldBytes = 0;
    if (held) for (const text of held) this.write(text);
    this.host.streamChanged(this, true);
  }

  send(text: string): void {
    if (this.closed) return;
    if (this.response) {
      this.write(text);
      return;
    }
    this.heldBytes += text.length;
    if (this.heldBytes > MAX_CLIENT_BACKLOG_BYTES) {
      this.close();
      return;
    }
    (this.held ??= []).push(text);
  }

  private write(text: string): void {
    const res = this.response!;
    if (!res.writable) return;
    res.write(text);
    // A client that cannot keep up is dropped rather than buffered without bound: it reconnects and resumes.
    if (res.writableLength > MAX_CLIENT_BACKLOG_BYTES) res.destroy();
  }

  forget(op: ReservedOperation): void {
    this.operations.delete(op.id);
  }

  /** Completes every operation and ends the event stream (gateway shutdown); clients reconnect elsewhere. */
  finish(): void {
    for (const op of [...this.operations.values()]) op.end(null);
    if (this.response?.writable) this.response.end();
    this.close('completed');
  }

  /** The reservation is over (its event stream closed, it expired, or the gateway closes): cancels its operations. */
  close(reason = 'closed'): void {
    if (this.closed) return;
    this.closed = true;
    this.held = null;
    for (const op of [...this.operations.values()]) op.drop();
    this.operations.clear();
    this.registry.remove(this);
    if (this.response) {
      if (!this.response.writableEnded) this.response.end();
      this.host.streamChanged(this, false);
      this.onEnd?.streamEnded(reason);
    }
  }
}

export type ReserveResult = { reservation: Reservation } | { refused: 'too-many' };

/** Every reservation of one stream handler, by token and by principal. */
export class Reservations {
  private readonly byToken = new Map<string, Reservation>();
  private readonly perPrincipal = new Map<string, number>();

  constructor(
    private readonly host: ReservationHost,
    readonly limits: ReservationLimits = DEFAULT_RESERVATION_LIMITS,
    private readonly now: () => number = Date.now,
    private readonly token: () => string = () => randomBytes(24).toString('base64url'),
  ) {}

  get size(): number {
    return this.byToken.size;
  }

  reserve(auth: AuthContext): ReserveResult {
    this.sweep();
    const principal = principalKey(auth);
    const held = this.perPrincipal.get(principal) ?? 0;
    if (held >= this.limits.perPrincipal) return { refused: 'too-many' };
    const reservation = new Reservation(this.token(), principal, this.now(), this.host, this);
    this.byToken.set(reservation.token, reservation);
    this.perPrincipal.set(principal, held + 1);
    return { reservation };
  }

  /** The caller's reservation named by `token`; undefined when there is none or it is someone else's. */
  find(token: string, auth: AuthContext): Reservation | undefined {
    const reservation = this.byToken.get(token);
    if (!reservation || reservation.principal !== principalKey(auth)) return undefined;
    if (!reservation.connected && this.expired(reservation)) {
      reservation.close();
      return undefined;
    }
    return reservation;
  }

  remove(reservation: Reservation): void {
    if (this.byToken.get(reservation.token) !== reservation) return;
    this.byToken.delete(reservation.token);
    const held = (this.perPrincipal.get(reservation.principal) ?? 1) - 1;
    if (held > 0) this.perPrincipal.set(reservation.principal, held);
    else this.perPrincipal.delete(reservation.principal);
  }

  /** Drops reservations never fulfilled in time (run on each new reservation: no timer per reservation). */
  sweep(): void {
    for (const reservation of this.byToken.values())
      if (!reservation.connected && this.expired(reservation)) reservation.close();
  }

  /** Closes every reservation (gateway shutdown): connected ones complete their operations first. */
  finishAll(): void {
    for (const reservation of [...this.byToken.values()]) reservation.finish();
  }

  private expired(reservation: Reservation): boolean {
    return this.now() - reservation.createdAt > this.limits.pendingTtlMs;
  }
}
