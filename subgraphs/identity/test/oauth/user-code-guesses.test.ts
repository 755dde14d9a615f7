/**
 * The wrong-guess limits on device user codes (RFC 8628 §5.1), on a fake clock: per member (5 in 15 minutes) and per
 * client address (20 in 15 minutes, across members). A right code resets neither: anyone can mint a valid code with
 * a standard client (openid-client here), so "4 wrong, 1 of my own, repeat" must not guess forever.
 */
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppError, AuthContext } from '@agentgraph/runtime';
import {
  findDeviceAuthorization,
  USER_CODE_ADDRESS_GUESSES,
  USER_CODE_GUESSES,
} from '../../src/oauth/device-approval.js';
import { deviceEnrolment, startOAuthIdentity, type OAuthHarness } from './harness.js';

let h: OAuthHarness;
let desktop: client.Configuration;
beforeAll(async () => {
  h = await startOAuthIdentity();
  desktop = await h.desktop();
});
afterAll(async () => {
  await h?.close();
});

const T0 = new Date('2031-03-01T09:00:00.000Z');
const MIN = 60_000;
const at = (ms: number) => new Date(T0.getTime() + ms);

/** A code that exists: minted by the attacker's own desktop, as anyone can. */
async function ownCode(): Promise<string> {
  return (await client.initiateDeviceAuthorization(desktop, (await deviceEnrolment()).params)).user_code;
}

let wrongSerial = 0;
/** A well-formed code nobody was given (BCDF-GH.. from the base-20 alphabet, never repeated). */
function wrongCode(): string {
  const alphabet = 'BCDFGHJKLMNPQRSTVWXZ';
  let n = wrongSerial++;
  let tail = '';
  for (let i = 0; i < 3; i++) {
    tail = alphabet[n % 20]! + tail;
    n = Math.floor(n / 20);
  }
  return `BCDF-G${tail}`;
}

/** One look-up through the guard, as /device and GraphQL make it: the answer's code, or 'OK'. */
async function lookUp(
  auth: AuthContext,
  code: string,
  address: string,
  now: Date,
): Promise<{ code: string; retryAfterMs?: unknown }> {
  try {
    await h.guarded(auth, (tx) => findDeviceAuthorization(h.oauth, tx, auth, code), { address, now });
    return { code: 'OK' };
  } catch (err) {
    const e = err as AppError;
    if (!e.code) throw err;
    return { code: e.code, retryAfterMs: e.extensions['retryAfterMs'] };
  }
}

describe('device user-code guesses', () => {
  it('the limits are 5 per member and 20 per address in 15 minutes, locking for 15 minutes', () => {
    expect(USER_CODE_GUESSES).toEqual({ maxFailures: 5, windowSeconds: 900, lockSeconds: 900 });
    expect(USER_CODE_ADDRESS_GUESSES).toEqual({ maxFailures: 20, windowSeconds: 900, lockSeconds: 900 });
  });

  it('a right code resets nothing: 4 wrong + 1 own code, repeated, is refused at the 6th wrong guess', async () => {
    const { auth } = await h.member('Guessers', 'mallory@guessers.test');
    const address = '192.0.2.10';
    let t = 0;
    // Round 1: four wrong guesses, then a code of the guesser's own, which is found.
    for (let i = 0; i < 4; i++)
      expect((await lookUp(auth, wrongCode(), address, at(t++ * MIN))).code).toBe('NOT_FOUND');
    expect((await lookUp(auth, await ownCode(), address, at(t++ * MIN))).code).toBe('OK');
    // Round 2: the 5th wrong guess in the window is still answered (NOT_FOUND) and locks the member ...
    expect((await lookUp(auth, wrongCode(), address, at(5 * MIN))).code).toBe('NOT_FOUND');
    // ... so the 6th wrong guess, 1 minute later, is refused with the rest of the 15-minute lock.
    expect(await lookUp(auth, wrongCode(), address, at(6 * MIN))).toEqual({
      code: 'RATE_LIMITED',
      retryAfterMs: 14 * MIN,
    });
    // A right code is refused too while locked, and from another address as well (the lock is the member's).
    expect((await lookUp(auth, await ownCode(), address, at(7 * MIN))).code).toBe('RATE_LIMITED');
    expect((await lookUp(auth, await ownCode(), '192.0.2.11', at(7 * MIN))).code).toBe('RATE_LIMITED');
    // Once the lock (15 minutes from the 5th wrong guess) has passed, codes work again.
    expect((await lookUp(auth, await ownCode(), address, at(20 * MIN))).code).toBe('OK');
    expect((await lookUp(auth, wrongCode(), address, at(20 * MIN))).code).toBe('NOT_FOUND');
  });

  it('counts per address across members: 20 wrong guesses from one address lock it for every member', async () => {
    const address = '198.51.100.20';
    const members: AuthContext[] = [];
    for (let i = 0; i < 6; i++) members.push((await h.member(`Spray ${i}`, `m${i}@spray.test`)).auth);
    // Five members make 4 wrong guesses each (none reaches its own limit of 5), minutes apart: 20 from the address.
    for (let m = 0; m < 5; m++) {
      for (let i = 0; i < 4; i++) {
        expect((await lookUp(members[m]!, wrongCode(), address, at((m * 4 + i) * 30_000))).code).toBe(
          'NOT_FOUND',
        );
      }
      // Their own right codes in between reset nothing either.
      expect((await lookUp(members[m]!, await ownCode(), address, at((m * 4 + 3) * 30_000))).code).toBe(
        m < 4 ? 'OK' : 'RATE_LIMITED',
      );
    }
    // The 20th wrong guess (at 9.5 minutes) locked the address: a member who never guessed is refused there ...
    expect(await lookUp(members[5]!, await ownCode(), address, at(10 * MIN))).toEqual({
      code: 'RATE_LIMITED',
      retryAfterMs: 15 * MIN - 30_000,
    });
    // ... while the same members elsewhere are not (each is below 5 wrong guesses of their own).
    expect((await lookUp(members[4]!, await ownCode(), '198.51.100.21', at(10 * MIN))).code).toBe('OK');
    expect((await lookUp(members[5]!, await ownCode(), '198.51.100.21', at(10 * MIN))).code).toBe('OK');
    // After the lock the address works again.
    expect((await lookUp(members[5]!, await ownCode(), address, at(25 * MIN))).code).toBe('OK');
  });
});
