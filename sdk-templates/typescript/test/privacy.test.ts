import { describe, expect, it } from 'vitest';
import { applyPrivacyGate, DEFAULT_PRIVACY_POLICY, PrivacyError, type PrivacyTable } from '../src/index.js';

describe('privacy gate', () => {
  it('returns a filtered copy and leaves the caller’s variables untouched', () => {
    const variables = { input: { title: 'x', email: 'ada@example.com' } };
    const table: PrivacyTable = {
      'input.title': { class: 'PUBLIC', required: true },
      'input.email': { class: 'PERSONAL', required: false },
    };
    const out = applyPrivacyGate('Op', variables, table, DEFAULT_PRIVACY_POLICY);
    expect(out).toEqual({ variables: { input: { title: 'x' } }, dropped: ['input.email'] });
    expect(variables.input.email).toBe('ada@example.com');
  });

  it('lets a deeper rule override the enclosing one', () => {
    const table: PrivacyTable = {
      input: { class: 'PERSONAL', required: true },
      'input.label': { class: 'PUBLIC', required: true },
    };
    const allowPersonal = { allow: ['PUBLIC', 'INTERNAL', 'PERSONAL'] as const };
    expect(
      applyPrivacyGate('Op', { input: { label: 'a', ssn: '123-45-6789' } }, table, allowPersonal).variables,
    ).toEqual({
      input: { label: 'a', ssn: '123-45-6789' },
    });
    expect(() => applyPrivacyGate('Op', { input: { label: 'a' } }, table, DEFAULT_PRIVACY_POLICY)).toThrow(
      PrivacyError,
    );
  });

  it('refuses a forbidden list element rule instead of shifting the list', () => {
    const table: PrivacyTable = { 'tags[]': { class: 'SECRET', required: false } };
    try {
      applyPrivacyGate('Op', { tags: ['a', 'b'] }, table, DEFAULT_PRIVACY_POLICY);
      expect.unreachable();
    } catch (err) {
      expect((err as PrivacyError).refusals).toEqual([
        { path: 'tags[0]', reason: 'class:SECRET' },
        { path: 'tags[1]', reason: 'class:SECRET' },
      ]);
    }
  });

  it('scans a SECRET field only when SECRET is allowed, and then still refuses what SECRET does not cover', () => {
    const table: PrivacyTable = { token: { class: 'SECRET', required: true } };
    const policy = { allow: ['PUBLIC', 'INTERNAL', 'SECRET'] as const };
    expect(
      applyPrivacyGate('Op', { token: 'ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8' }, table, policy).variables,
    ).toEqual({
      token: 'ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8',
    });
    expect(() => applyPrivacyGate('Op', { token: 'ssn 123-45-6789' }, table, policy)).toThrow(
      /token \(ssn\)/,
    );
  });

  it('never puts the value in the error', () => {
    const secret = 'postgres://admin:hunter2@db/app';
    try {
      applyPrivacyGate(
        'Op',
        { note: secret },
        { note: { class: 'PUBLIC', required: true } },
        DEFAULT_PRIVACY_POLICY,
      );
      expect.unreachable();
    } catch (err) {
      expect(String((err as Error).message)).not.toContain('hunter2');
      expect(JSON.stringify(err)).not.toContain('hunter2');
      expect((err as PrivacyError).message).toContain('note (url-password)');
    }
  });

  it('passes numbers, booleans and enums through without scanning', () => {
    const table: PrivacyTable = { input: { class: 'PUBLIC', required: true } };
    const vars = { input: { n: 4111111111111111, ok: true, role: 'ADMIN' } };
    expect(applyPrivacyGate('Op', vars, table, DEFAULT_PRIVACY_POLICY).variables).toEqual(vars);
  });
});
